#!/usr/bin/env bash
# make release-check: proves the release works before a tag does.
#   release-check.sh        goreleaser check of both configurations, then a
#                           snapshot release of every target, signed with a
#                           throwaway GPG key, verified as the Terraform
#                           Registry reads it; prints the provider's sums
#   release-check.sh ci     goreleaser check and one snapshot build for this
#                           machine's target (what CI runs)
# The release is two goreleaser runs: .goreleaser.yml (the provider, whose
# SHA256SUMS the Registry reads as its package list) and .goreleaser-cli.yml
# (the kafkascale command, with a signed sums file of its own).
# goreleaser is installed at the pinned version when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v2.15.1
gr="$(go env GOPATH)/bin/goreleaser"
if ! "$gr" --version 2>/dev/null | grep -Eq "GitVersion:[[:space:]]+v?${version#v}\$"; then
  echo "installing goreleaser $version"
  go install "github.com/goreleaser/goreleaser/v2@$version"
fi

provider_cfg=.goreleaser.yml
cli_cfg=.goreleaser-cli.yml
# The CLI's dist directory (its config's `dist`), inside the provider's: the
# provider's run, which cleans dist, goes first.
cli_dist=dist/kafkascale

"$gr" check -f "$provider_cfg"
"$gr" check -f "$cli_cfg"

if [[ "${1:-all}" == ci ]]; then
  "$gr" build -f "$provider_cfg" --snapshot --clean --single-target
  "$gr" build -f "$cli_cfg" --snapshot --clean --single-target
  # Both builds ran: the provider and the companion command.
  ls dist/provider_*/terraform-provider-kafkascale_v* >/dev/null && ls "$cli_dist"/kafkascale_*/kafkascale* >/dev/null ||
    { echo "release-check: the snapshot build lacks the provider or the kafkascale command" >&2; rm -rf dist; exit 1; }
  rm -rf dist
  exit 0
fi

# A throwaway key, in a GNUPGHOME that dies with this script: the signing
# step runs exactly as it will with the real key, which is RSA too (the
# Registry takes RSA and DSA keys, not ECC ones).
GNUPGHOME="$(mktemp -d)"
export GNUPGHOME
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME"; [[ -n "${KEEP_DIST:-}" ]] || rm -rf dist' EXIT
gpg --batch --quiet --passphrase '' --quick-gen-key "kafkascale release check <release-check@example.invalid>" rsa3072 sign 1d
GPG_FINGERPRINT="$(gpg --list-secret-keys --with-colons | awk -F: '/^fpr/ {print $10; exit}')"
export GPG_FINGERPRINT

# Every target is a full build of the provider: on a busy 2-core machine
# that can pass goreleaser's default one-hour limit.
"$gr" release -f "$provider_cfg" --snapshot --clean --timeout 3h
"$gr" release -f "$cli_cfg" --snapshot --clean --timeout 3h

name=terraform-provider-kafkascale
sums=$(ls dist/${name}_*_SHA256SUMS)
ver=${sums#dist/${name}_}
ver=${ver%_SHA256SUMS}
fail=0
problem() { echo "release-check: $*" >&2; fail=1; }

# listed SUMS: the file names a sums file lists, sorted.
listed() { awk '{print $2}' "$1" | sort; }
# same_set WHAT WANT GOT: fails the check unless the two sorted lists match.
same_set() {
  if [[ "$2" != "$3" ]]; then
    problem "$1 lists other files than it should:"
    diff <(echo "$2") <(echo "$3") | sed -n 's/^[<>]/  &/p' >&2 || true
    echo "  (< expected, > listed)" >&2
  fi
}

# --- The provider: what the Registry reads. ---
# The Registry verifies the signature of the sums, then every zip against them.
gpg --batch --verify "$sums.sig" "$sums" || problem "$sums.sig does not verify"
# The release uploads terraform-registry-manifest.json under this name
# (release.extra_files); a snapshot publishes nothing, so put it where the
# Registry will find it, then check it against the sums like every zip.
manifest=${name}_${ver}_manifest.json
cp terraform-registry-manifest.json "dist/$manifest"
(cd dist && sha256sum --quiet -c "$(basename "$sums")") || problem "a checksum in $sums does not match"

zips=(dist/${name}_${ver}_*.zip)
for z in "${zips[@]}"; do
  base=$(basename "$z" .zip)
  [[ $base =~ ^${name}_${ver}_[a-z0-9]+_[a-z0-9]+$ ]] || problem "$z is not named <name>_<version>_<os>_<arch>.zip"
  unzip -Z1 "$z" | grep -Eq "^${name}_v${ver}(\.exe)?\$" || problem "$z does not hold ${name}_v${ver}"
  # The Registry's zips carry the provider, not the companion command.
  if unzip -Z1 "$z" | grep -Eq "(^|/)kafkascale(\.exe)?\$"; then problem "$z holds the kafkascale command"; fi
done
for want in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64; do
  [[ -f dist/${name}_${ver}_${want}.zip ]] || problem "no $want zip"
done
# The provider's sums list its zips and its manifest, and nothing else: an
# extra entry makes the Registry and `terraform providers lock` take it for
# a provider package.
same_set "$(basename "$sums")" "$(printf '%s\n' "${zips[@]##*/}" "$manifest" | sort)" "$(listed "$sums")"

# --- The kafkascale command: its own archives, sums and signature. ---
cli_sums=$cli_dist/kafkascale_${ver}_SHA256SUMS
if [[ ! -f $cli_sums ]]; then
  problem "no $cli_sums"
else
  gpg --batch --verify "$cli_sums.sig" "$cli_sums" || problem "$cli_sums.sig does not verify"
  (cd "$cli_dist" && sha256sum --quiet -c "$(basename "$cli_sums")") || problem "a checksum in $cli_sums does not match"
  companions=("$cli_dist"/kafkascale_${ver}_*.tar.gz "$cli_dist"/kafkascale_${ver}_*.zip)
  same_set "$(basename "$cli_sums")" "$(printf '%s\n' "${companions[@]##*/}" | sort)" "$(listed "$cli_sums")"
  for want in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
    a=$cli_dist/kafkascale_${ver}_${want}.tar.gz
    [[ -f $a ]] && tar -tzf "$a" | grep -x kafkascale >/dev/null || problem "no $a holding kafkascale"
  done
  a=$cli_dist/kafkascale_${ver}_windows_amd64.zip
  [[ -f $a ]] && unzip -Z1 "$a" | grep -x kafkascale.exe >/dev/null || problem "no $a holding kafkascale.exe"
fi

echo "== the provider's $(basename "$sums") (signed: $(basename "$sums").sig), what the Registry reads:"
cat "$sums"
echo "== the kafkascale command's $(basename "$cli_sums") (signed: $(basename "$cli_sums").sig):"
cat "$cli_sums" 2>/dev/null || true
if ((fail)); then
  echo "release-check: FAILED" >&2
else
  echo "release-check: the provider's sums list exactly its ${#zips[@]} zips and the manifest; both sums files verify"
fi
exit $fail
