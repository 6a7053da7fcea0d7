#!/usr/bin/env bash
# Waits until a task has ended (success, failed, rejected or cancelled), then prints its task
# status record. Needs GG (base URL) and T (an API token):
#   docs/examples/wait-task.sh task_… [seconds to wait, default 120]
set -e -o pipefail
task=${1:?usage: wait-task.sh TASK_ID [SECONDS]}
deadline=$((SECONDS + ${2:-120}))
while :; do
  record=$(curl -sS --fail-with-body "$GG/v1/ai/result/$task" -H "Authorization: Bearer $T")
  case $(jq -r .queue_status.status <<<"$record") in
    success|failed|rejected|cancelled) printf '%s\n' "$record"; exit 0;;
  esac
  if ((SECONDS >= deadline)); then echo "task $task still running after ${2:-120} s" >&2; exit 1; fi
  sleep 0.5
done
