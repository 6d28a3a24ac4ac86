#!/usr/bin/env bash
# Finds the Terraform CLI the acceptance tests and the demo drive: the one
# named by TF_ACC_TERRAFORM_PATH, else `terraform` on PATH. With neither,
# it says how to get one and fails (CI installs one itself: see .ci/run).
set -euo pipefail
if [[ -n "${TF_ACC_TERRAFORM_PATH:-}" ]]; then
  [[ -x "$TF_ACC_TERRAFORM_PATH" ]] || { echo "TF_ACC_TERRAFORM_PATH=$TF_ACC_TERRAFORM_PATH is not an executable" >&2; exit 1; }
  exit 0
fi
if command -v terraform >/dev/null 2>&1; then
  exit 0
fi
cat >&2 <<'MSG'
No Terraform CLI found: neither TF_ACC_TERRAFORM_PATH nor `terraform` on PATH.
Install Terraform 1.5 or newer, for example from source with Go:
    go install github.com/hashicorp/terraform@v1.5.7
and make sure $(go env GOPATH)/bin is on PATH, or set TF_ACC_TERRAFORM_PATH
to the binary.
MSG
exit 1
