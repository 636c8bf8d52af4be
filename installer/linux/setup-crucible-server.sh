#!/usr/bin/env bash
# Unattended set-up of a Linux GPU server, for one node or many (ssh node sudo bash this-script):
# a system user, `crucible-agent setup` (driver, GPUs, CUDA against NVML, the private data folder,
# the first admin token), the systemd unit, and a check that the service answers.
#
#   sudo bash setup-crucible-server.sh [--bin /usr/bin] [--data /var/lib/crucible] [--port 7443]
#        [--user crucible] [--token-file /root/crucible-admin.token] [--log FILE]
#
# Exit codes: 0 the agent serves; 1 a setup step failed (the report says which and what to do);
# 2 bad arguments; 3 not run as root; 4 no systemd; 5 the service did not come up.
set -euo pipefail

bin=/usr/bin
data=/var/lib/crucible
port=7443
user=crucible
token_file=/root/crucible-admin.token
log=/var/log/crucible-setup.log
usage() { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin="${2:?}"; shift 2 ;;
    --data) data="${2:?}"; shift 2 ;;
    --port) port="${2:?}"; shift 2 ;;
    --user) user="${2:?}"; shift 2 ;;
    --token-file) token_file="${2:?}"; shift 2 ;;
    --log) log="${2:?}"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "setup-crucible-server: unknown argument '$1'" >&2; usage ;;
    esac
done
case "$port" in '' | *[!0-9]*) echo "--port '$port' is not a number" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "run as root (sudo)" >&2; exit 3; }
command -v systemctl >/dev/null || { echo "no systemd here: start $bin/crucible-agent yourself" >&2; exit 4; }
agent="$bin/crucible-agent"
[ -x "$agent" ] || { echo "$agent not found: install Crucible's server package first (--bin)" >&2; exit 2; }

# A transcript of every run, appended.
mkdir -p "$(dirname "$log")"
exec > >(tee -a "$log") 2>&1
echo "== $(date -u '+%Y-%m-%d %H:%M:%SZ') crucible server set-up on $(hostname)"

if ! id "$user" >/dev/null 2>&1; then
    useradd --system --home-dir "$data" --no-create-home --shell /usr/sbin/nologin "$user"
    echo "created system user $user"
fi
# The agent's user needs the GPUs: the video and render groups where the distribution has them.
for group in video render; do
    getent group "$group" >/dev/null && usermod -aG "$group" "$user"
done

rc=0
"$agent" setup --data "$data" --listen "0.0.0.0:$port" --token-file "$token_file" \
    --no-service || rc=$?
chown -R "$user:" "$data"
chmod 600 "$token_file" 2>/dev/null || true
[ $rc -eq 0 ] || { echo "crucible-agent setup reported a failed step (above)"; exit 1; }

unit=/etc/systemd/system/crucible-agent.service
cat >"$unit" <<UNIT
# Written by setup-crucible-server.sh; run it again to change the port or the data folder.
[Unit]
Description=Crucible agent (GPU training server)
After=network-online.target
Wants=network-online.target

[Service]
User=$user
ExecStart=$agent --listen 0.0.0.0:$port --data $data
# SIGTERM makes the agent ask every worker to checkpoint and stop; give them time.
KillSignal=SIGTERM
TimeoutStopSec=180
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
systemctl daemon-reload
systemctl enable crucible-agent >/dev/null
systemctl restart crucible-agent

for _ in $(seq 1 30); do
    if systemctl is-active --quiet crucible-agent && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "crucible-agent serves on port $port (data $data, user $user)."
        [ -f "$token_file" ] && echo "The first admin token is in $token_file."
        echo "Open TCP $port in the firewall if one runs (ufw allow $port/tcp)."
        exit 0
    fi
    sleep 1
done
echo "crucible-agent did not come up: journalctl -u crucible-agent -n 50"
exit 5
