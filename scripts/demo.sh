#!/usr/bin/env bash
# `make demo`: start a local 3-broker Kafka cluster with its scaling API,
# then apply examples/quickstart with the provider just built, through a CLI
# config with dev_overrides so that no registry is involved.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
demo="$root/.demo"
cluster="$demo/cluster"
work="$demo/quickstart"
mkdir -p "$demo" "$work"

echo "== 1. local Kafka cluster (3 brokers, racks a,b,c) with its scaling API"
if "$bin/kafkascale-local" status --dir "$cluster" >/dev/null 2>&1; then
  echo "already running in $cluster"
else
  "$bin/kafkascale-local" up --brokers 3 --racks a,b,c --dir "$cluster" --api-addr 127.0.0.1:7070
fi
bootstrap=$("$bin/kafkascale-local" status --dir "$cluster" --bootstrap)
echo "bootstrap servers: $bootstrap"

echo "== 2. Terraform CLI config pointing kafkascale/kafkascale at $bin"
cat > "$demo/terraformrc" <<CFG
provider_installation {
  dev_overrides {
    "kafkascale/kafkascale" = "$bin"
  }
  direct {}
}
CFG
export TF_CLI_CONFIG_FILE="$demo/terraformrc"
cp "$root"/examples/quickstart/*.tf "$work/"

tfvar="[$(sed 's/[^,][^,]*/"&"/g' <<<"$bootstrap")]"
echo "== 3. terraform apply examples/quickstart"
terraform -chdir="$work" apply -auto-approve -input=false -var "bootstrap_servers=$tfvar"

echo
echo "The cluster is still running: '$bin/kafkascale-local status --dir $cluster'."
echo "Stop it with 'make demo-down'."
