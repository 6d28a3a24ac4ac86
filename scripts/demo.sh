#!/usr/bin/env bash
# `make demo`: start a local 3-broker Kafka cluster with its HTTP scaling API,
# fill a topic with data, then let Terraform scale the cluster to 5 brokers
# with the provider just built (through dev_overrides, so no registry is
# involved). The plan shows the cost before anything moves.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
demo="$root/.demo"
cluster="$demo/cluster"
work="$demo/quickstart"
# Every run starts from a fresh cluster and an empty Terraform state.
"$bin/kafkascale-local" down --dir "$cluster" >/dev/null 2>&1 || true
rm -rf "$work"
mkdir -p "$demo" "$work"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. A local Kafka cluster: 3 brokers in racks a, b, c, with its scaling API"
"$bin/kafkascale-local" up --brokers 3 --racks a,b,c --dir "$cluster" --api-addr 127.0.0.1:7070
step "2. 100 MiB of data in topic 'demo' (24 partitions, replication factor 3)"
"$bin/kafkascale-local" load --dir "$cluster" --topic demo --partitions 24 --replication-factor 3 --mb 100
bootstrap=$("$bin/kafkascale-local" status --dir "$cluster" --bootstrap)
tfvar="[$(sed 's/[^,][^,]*/"&"/g' <<<"$bootstrap")]"

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
tf() { terraform -chdir="$work" "$@" -input=false -no-color -var "bootstrap_servers=$tfvar"; }

step "3. terraform apply: adopt the cluster as it is (broker_count = 3)"
tf apply -auto-approve -var broker_count=3 | sed -n '/Apply complete/,$p'

step "4. terraform plan: broker_count = 5 (the cost shows before anything moves)"
tf plan -var broker_count=5 | grep -E 'broker_count|planned_moves|planned_bytes|estimated_duration|Plan:' || true

step "5. terraform apply: broker_count = 5 (adds 2 brokers, moves replicas onto them, throttled, then elects leaders)"
start=$(date +%s)
tf apply -auto-approve -var broker_count=5 | sed -n '/Apply complete/,$p'
echo "apply took $(( $(date +%s) - start ))s"

step "The cluster keeps running: '$bin/kafkascale-local status --dir $cluster'; 'make demo-down' stops it."
"$bin/kafkascale-local" status --dir "$cluster"
