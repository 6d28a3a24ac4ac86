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

# The Streams part: a live Kafka Streams app grown from 4 to 8 partitions.
swork="$demo/streams"
rm -rf "$swork" "$demo/shop-state"
mkdir -p "$swork"
cp "$root"/examples/streams-quickstart/*.tf "$swork/"
stf() { terraform -chdir="$swork" "$@" -input=false -no-color -var "bootstrap_servers=$tfvar"; }
app_pid=""
stop_app() { if [ -n "$app_pid" ]; then kill "$app_pid" 2>/dev/null || true; wait "$app_pid" 2>/dev/null || true; fi; app_pid=""; }
trap stop_app EXIT

step "6. terraform apply: the topics of a Kafka Streams app (4 partitions each)"
stf apply -auto-approve | sed -n '/Apply complete/,$p'

step "7. Start the Kafka Streams app 'shop' (group.protocol=streams; built with Maven on first use)"
jar="$root/test/streams-app/target/streams-app.jar"
[ -f "$jar" ] || mvn -q -B -f "$root/test/streams-app/pom.xml" package -DskipTests
java -Xmx256m -XX:+UseSerialGC -jar "$jar" --bootstrap "$bootstrap" --application-id shop \
  --state-dir "$demo/shop-state" --group-protocol streams >"$demo/shop.log" 2>&1 &
app_pid=$!
for _ in $(seq 1 120); do grep -q 'KSAPP STATE .* -> RUNNING' "$demo/shop.log" && break; sleep 1; done
grep -q 'KSAPP STATE .* -> RUNNING' "$demo/shop.log" || { tail -20 "$demo/shop.log"; echo "the Streams app did not start"; exit 1; }
echo "shop is RUNNING (log: $demo/shop.log)"

step "8. terraform apply: adopt the running app at 4 partitions"
stf apply -auto-approve -var manage_app=true | sed -n '/Apply complete/,$p'

step "9. terraform plan: partitions = 8 (the ordered steps show before anything grows)"
stf plan -var manage_app=true -var partitions=8 | sed -n '/kafkascale_streams_app.shop\[0\] will be updated/,/^    }/p'

step "10. terraform apply: partitions = 8 (sinks, then sources and internal topics in one request, then wait until stable)"
start=$(date +%s)
stf apply -auto-approve -var manage_app=true -var partitions=8 | sed -n '/Apply complete/,$p'
echo "apply took $(( $(date +%s) - start ))s; the app is still $(grep -o 'KSAPP STATE [A-Z_]* -> [A-Z_]*' "$demo/shop.log" | tail -1)"
stop_app

step "The cluster keeps running: '$bin/kafkascale-local status --dir $cluster'; 'make demo-down' stops it."
"$bin/kafkascale-local" status --dir "$cluster"
