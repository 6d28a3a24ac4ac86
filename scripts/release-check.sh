#!/usr/bin/env bash
# make release-check: proves the release works before a tag does.
#   release-check.sh        goreleaser check, then a snapshot release of every
#                           target signed with a throwaway GPG key, verified as
#                           the Terraform Registry reads it
#   release-check.sh ci     goreleaser check and one snapshot build for this
#                           machine's target (what CI runs)
# goreleaser is installed at the pinned version when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

version=v2.15.1
gr="$(go env GOPATH)/bin/goreleaser"
if ! "$gr" --version 2>/dev/null | grep -Eq "GitVersion:[[:space:]]+v?${version#v}\$"; then
  echo "installing goreleaser $version"
  go install "github.com/goreleaser/goreleaser/v2@$version"
fi

"$gr" check

if [[ "${1:-all}" == ci ]]; then
  "$gr" build --snapshot --clean --single-target
  # Both builds ran: the provider and the companion command.
  ls dist/provider_*/terraform-provider-kafkascale_v* >/dev/null && ls dist/kafkascale_*/kafkascale* >/dev/null ||
    { echo "release-check: the snapshot build lacks the provider or the kafkascale command" >&2; rm -rf dist; exit 1; }
  rm -rf dist
  exit 0
fi

# A throwaway key, in a GNUPGHOME that dies with this script: the signing
# step runs exactly as it will with the real key.
GNUPGHOME="$(mktemp -d)"
export GNUPGHOME
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME"; [[ -n "${KEEP_DIST:-}" ]] || rm -rf dist' EXIT
gpg --batch --quiet --passphrase '' --quick-gen-key "kafkascale release check <release-check@example.invalid>" ed25519 sign 1d
GPG_FINGERPRINT="$(gpg --list-secret-keys --with-colons | awk -F: '/^fpr/ {print $10; exit}')"
export GPG_FINGERPRINT

# Every target is a full build of the provider: on a busy 2-core machine
# that can pass goreleaser's default one-hour limit.
"$gr" release --snapshot --clean --timeout 3h

name=terraform-provider-kafkascale
sums=$(ls dist/${name}_*_SHA256SUMS)
ver=${sums#dist/${name}_}
ver=${ver%_SHA256SUMS}
fail=0
problem() { echo "release-check: $*" >&2; fail=1; }

# The Registry verifies the signature of the sums, then every zip against them.
gpg --batch --verify "$sums.sig" "$sums" || problem "$sums.sig does not verify"
# The release uploads terraform-registry-manifest.json under this name
# (release.extra_files); a snapshot publishes nothing, so put it where the
# Registry will find it, then check it against the sums like every zip.
manifest=${name}_${ver}_manifest.json
cp terraform-registry-manifest.json "dist/$manifest"
grep -q " ${manifest}\$" "$sums" || problem "$manifest is not in $sums"
(cd dist && sha256sum --quiet -c "$(basename "$sums")") || problem "a checksum in $sums does not match"

zips=(dist/${name}_${ver}_*.zip)
for z in "${zips[@]}"; do
  base=$(basename "$z" .zip)
  [[ $base =~ ^${name}_${ver}_[a-z0-9]+_[a-z0-9]+$ ]] || problem "$z is not named <name>_<version>_<os>_<arch>.zip"
  unzip -Z1 "$z" | grep -Eq "^${name}_v${ver}(\.exe)?\$" || problem "$z does not hold ${name}_v${ver}"
  # The Registry's zips carry the provider, not the companion command.
  if unzip -Z1 "$z" | grep -Eq "(^|/)kafkascale(\.exe)?\$"; then problem "$z holds the kafkascale command"; fi
done
# The companion command ships in archives of its own, for the same targets.
for want in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
  a=dist/kafkascale_${ver}_${want}.tar.gz
  [[ -f $a ]] && tar -tzf "$a" | grep -x kafkascale >/dev/null || problem "no $a holding kafkascale"
  grep -q " $(basename "$a")\$" "$sums" || problem "$(basename "$a") is not in $sums"
done
[[ -f dist/kafkascale_${ver}_windows_amd64.zip ]] || problem "no kafkascale windows_amd64 zip"
for want in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64; do
  [[ -f dist/${name}_${ver}_${want}.zip ]] || problem "no $want zip"
done

companions=(dist/kafkascale_${ver}_*)
printf '%s\n' "artifacts of ${name} ${ver}:" "${zips[@]##*/}" "${companions[@]##*/}" "$(basename "$sums")" "$(basename "$sums").sig" "$manifest"
exit $fail
