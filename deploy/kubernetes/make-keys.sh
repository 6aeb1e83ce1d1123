#!/usr/bin/env bash
# Writes secret.yaml: the Secret tessera-keys with CURVE key pairs for the scheduler, the workers and one
# client (made by `tessera keygen`), the scheduler's list of accepted keys (workers and client) and the
# workers' (each other). The client's pair is also left in OUT/client.{key,pub} for `tessera
# --client-config`. Usage: make-keys.sh [OUT_DIR (default: this folder)] [TESSERA (default: tessera)]
set -euo pipefail
out=${1:-$(dirname "$0")}
tessera=${2:-tessera}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for who in scheduler worker client; do
  "$tessera" keygen --out "$work/$who" >/dev/null
done
cat "$work/worker.pub" "$work/client.pub" >"$work/authorized_keys"
cp "$work/worker.pub" "$work/worker_peers"
mkdir -p "$out"
{
  echo "# Made by make-keys.sh: the cluster's CURVE keys. Keep it out of version control."
  echo "apiVersion: v1"
  echo "kind: Secret"
  echo "metadata:"
  echo "  name: tessera-keys"
  echo "  labels:"
  echo "    app.kubernetes.io/name: tessera"
  echo "type: Opaque"
  echo "data:"
  for file in scheduler.key scheduler.pub worker.key worker.pub authorized_keys worker_peers; do
    echo "  $file: $(base64 -w0 "$work/$file")"
  done
} >"$out/secret.yaml"
chmod 600 "$out/secret.yaml"
install -m 600 "$work/client.key" "$out/client.key"
install -m 644 "$work/client.pub" "$out/client.pub"
echo "wrote $out/secret.yaml and $out/client.{key,pub}; the scheduler's public key: $(cat "$work/scheduler.pub")"
