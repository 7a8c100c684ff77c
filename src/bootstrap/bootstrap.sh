#!/bin/sh
# muster bootstrap, served by the Platform at @@URL@@/bootstrap/bootstrap.sh.
# Run as root on a machine that has curl and sh:
#   … | sh -s -- --node-id NAME [--enrollment-token-file FILE] [--root DIR] [--no-start]
#        [--address ADDR]... [--port PORT] [--label KEY=VALUE]... [--heartbeat-only]
# 1. downloads the Platform's muster binary and install.sh over https verified
#    with the Platform CA below, and checks each one's SHA-256 before using it;
# 2. installs the worker role (install.sh --role worker: the muster account,
#    the binary, the muster-agent unit, the receipt);
# 3. joins as the muster account (muster worker join, pinned to the Platform
#    CA), with the join token from --enrollment-token-file, else
#    $MUSTER_ENROLLMENT_TOKEN, else a no-echo prompt on the terminal; the
#    token reaches worker join on stdin, never on a command line;
# 4. starts the Agent: muster-agent.service where systemd runs (not in a
#    --root), else in the background (log: DATA/agent.log) as the muster
#    account with what the unit grants (ambient CAP_SETUID, CAP_SETGID,
#    CAP_KILL, and a cgroup v2 subtree of its own: /muster-agent), or as root
#    where setpriv cannot pass capabilities; then checks that replicas cannot
#    read the node's key (worker/isolation.json) and fails when they can.
# Running it again is harmless: install.sh updates in place, a joined node is
# not joined again, and a running Agent is left running.
# Everything is inside main(): `curl … | sh` runs nothing of a script cut short,
# and no command it runs can read the rest of the script from stdin.
main() {
	set -eu
	PLATFORM='@@URL@@'
	PIN='@@PIN@@'
	BIN_SHA256='@@BIN_SHA256@@'
	INSTALL_SHA256='@@INSTALL_SHA256@@'
	ARCH='@@ARCH@@'
	die() { printf 'muster bootstrap: %s\n' "$*" >&2; exit 1; }
	say() { printf '%s\n' "$*"; }
	q() { printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"; }
	NODE='' TOKEN_FILE='' ROOT='' START=1 JOIN_EXTRA=''
	while [ $# -gt 0 ]; do
		case $1 in
		--node-id | --enrollment-token-file | --root | --address | --port | --label)
			[ $# -ge 2 ] || die "$1 needs a value"
			case $1 in
			--node-id) NODE=$2 ;;
			--enrollment-token-file) TOKEN_FILE=$2 ;;
			--root) ROOT=$2 ;;
			*) JOIN_EXTRA="$JOIN_EXTRA $1 $(q "$2")" ;;
			esac
			shift 2
			;;
		--no-start) START=0; shift ;;
		--heartbeat-only) JOIN_EXTRA="$JOIN_EXTRA --heartbeat-only"; shift ;;
		*) die "unknown argument: $1 (known: --node-id NAME --enrollment-token-file FILE --root DIR --no-start --address ADDR --port PORT --label KEY=VALUE --heartbeat-only)" ;;
		esac
	done
	[ -n "$NODE" ] || die "give this machine's node name: … | sh -s -- --node-id NAME"
	[ "$NODE" != NAME ] || die "replace NAME with this machine's node name (one the join token allows, like worker-1)"
	printf '%s' "$NODE" | grep -Eq '^[a-z0-9][a-z0-9-]{0,62}$' || die "--node-id $NODE: expected a name like worker-1 (lowercase letters, digits, dashes)"
	[ "$(id -u)" -eq 0 ] || die "run it as root: put sudo before the sh at the end of the line (… | sudo sh -s -- --node-id $NODE)"
	[ "$(uname -s)" = Linux ] || die "muster runs on Linux; this machine is $(uname -s)"
	[ "$(uname -m)" = "$ARCH" ] || die "this machine is $(uname -m) and the Platform serves a $ARCH binary: install muster for $(uname -m) with install.sh --binary, then run the worker join line"
	command -v curl >/dev/null 2>&1 || die "curl is needed"
	if command -v sha256sum >/dev/null 2>&1; then SHA=sha256sum
	elif command -v openssl >/dev/null 2>&1; then SHA='openssl dgst -sha256 -r'
	else die "sha256sum (coreutils) or openssl is needed to check the downloads"; fi
	R=''
	if [ -n "$ROOT" ]; then
		[ -d "$ROOT" ] || die "--root $ROOT is not a directory"
		R=$(cd "$ROOT" && pwd -P)
		[ "$R" != / ] || R=''
	fi
	DATA=$R/var/lib/muster
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/muster-bootstrap.XXXXXX") || die "cannot create a temporary directory"
	STTY=''
	# shellcheck disable=SC2154 # rc is set inside the trap
	trap 'rc=$?; [ -z "$STTY" ] || stty "$STTY" </dev/tty 2>/dev/null; rm -rf "$WORK"; exit $rc' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	# The token first (before the long download); a machine that already joined needs none.
	TOKEN=''
	if [ -n "$TOKEN_FILE" ]; then
		TOKEN=$(cat -- "$TOKEN_FILE") || die "cannot read --enrollment-token-file $TOKEN_FILE"
	elif [ -n "${MUSTER_ENROLLMENT_TOKEN:-}" ]; then
		TOKEN=$MUSTER_ENROLLMENT_TOKEN
	elif [ ! -f "$DATA/worker/agent.json" ]; then
		(: </dev/tty) 2>/dev/null || die "no join token: give --enrollment-token-file FILE or set MUSTER_ENROLLMENT_TOKEN, or run it at a terminal to be asked"
		STTY=$(stty -g </dev/tty 2>/dev/null || true)
		printf 'Join token for %s (not shown): ' "$NODE" >/dev/tty
		stty -echo </dev/tty 2>/dev/null || true
		IFS= read -r TOKEN </dev/tty || true
		[ -z "$STTY" ] || stty "$STTY" </dev/tty 2>/dev/null || true
		STTY=''
		printf '\n' >/dev/tty
	fi
	TOKEN=$(printf '%s' "$TOKEN" | tr -d ' \r\n\t')
	if [ -n "$TOKEN" ]; then
		case $TOKEN in mjt_*) ;; *) die "that is not a join token (they start with mjt_; muster nodes join-token create prints one)" ;; esac
	elif [ ! -f "$DATA/worker/agent.json" ]; then
		die "the join token is empty"
	fi

	# 1. the binary and install.sh, each checked before it is used
	cat >"$WORK/ca.pem" <<'MUSTER_PLATFORM_CA'
@@CA_PEM@@
MUSTER_PLATFORM_CA
	fetch() {
		curl -fsS --proto =https --cacert "$WORK/ca.pem" --connect-timeout 20 --max-time 900 --retry 2 -o "$2" "$PLATFORM$1" </dev/null ||
			die "download of $PLATFORM$1 failed (above); nothing was installed"
	}
	say "downloading muster from $PLATFORM"
	fetch /bootstrap/muster "$WORK/muster"
	got=$($SHA "$WORK/muster" | cut -d ' ' -f 1)
	[ "$got" = "$BIN_SHA256" ] || die "checksum mismatch for the muster binary from $PLATFORM: expected $BIN_SHA256, got $got; nothing was installed"
	fetch /bootstrap/install.sh "$WORK/install.sh"
	got=$($SHA "$WORK/install.sh" | cut -d ' ' -f 1)
	[ "$got" = "$INSTALL_SHA256" ] || die "checksum mismatch for install.sh from $PLATFORM: expected $INSTALL_SHA256, got $got; nothing was installed"

	# 2. the worker role; the Agent starts in step 4, once it has joined
	set -- --role worker --binary "$WORK/muster" --no-start
	[ -z "$R" ] || set -- "$@" --root "$R"
	# install.sh's own "Next:" steps are what this script does now: its report is shown up to them.
	sh "$WORK/install.sh" "$@" </dev/null >"$WORK/install.out" || { cat "$WORK/install.out"; die "install.sh failed (above)"; }
	sed -e '/^$/,$d' -e '/(--no-start)$/d' "$WORK/install.out"
	RCPT=$R/etc/muster/receipt.json
	value() { sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$RCPT" | head -n 1; }
	ID_U=$(value uid) ID_G=$(value gid)
	DATA=$R$(value dataDir)
	BIN=$R$(value binary)
	{ [ -n "$ID_U" ] && [ -n "$ID_G" ] && [ -x "$BIN" ]; } || die "cannot read $RCPT"
	# What the node runs, it runs as the muster account; the Agent with the capabilities the unit grants it.
	AS='' AGENT_AS=''
	if command -v setpriv >/dev/null 2>&1; then
		AS="setpriv --reuid=$ID_U --regid=$ID_G --clear-groups --"
		if setpriv --help 2>/dev/null | grep -q -- --ambient-caps; then
			AGENT_AS="setpriv --reuid=$ID_U --regid=$ID_G --clear-groups --bounding-set=-all,+setuid,+setgid,+kill --inh-caps=-all,+setuid,+setgid,+kill --ambient-caps=+setuid,+setgid,+kill --"
		fi
	fi

	# 3. join (the token on stdin)
	if [ -n "$TOKEN" ]; then
		eval "set -- $JOIN_EXTRA"
		# shellcheck disable=SC2086 # AS is our own words
		printf '%s\n' "$TOKEN" | env HOME="$DATA" $AS "$BIN" worker join --platform-url "$PLATFORM" --node-id "$NODE" --platform-fingerprint "$PIN" --data-dir "$DATA" --json "$@" >/dev/null ||
			die "worker join failed (above); fix that and run this line again: it is safe to repeat"
		TOKEN=''
		say "joined $PLATFORM as $NODE"
	else
		# Joined before: worker join keeps a credential the Platform still accepts and asks for nothing;
		# over a dead one (revoked, removed, rebound) it asks for a new token at the terminal.
		IN=/dev/null
		if (: </dev/tty) 2>/dev/null; then IN=/dev/tty; fi
		eval "set -- $JOIN_EXTRA"
		# shellcheck disable=SC2086 # AS is our own words
		env HOME="$DATA" $AS "$BIN" worker join --platform-url "$PLATFORM" --node-id "$NODE" --platform-fingerprint "$PIN" --data-dir "$DATA" --json "$@" <"$IN" >"$WORK/join.json" ||
			die "worker join failed (above); give the new token with --enrollment-token-file FILE or MUSTER_ENROLLMENT_TOKEN, or run this line at a terminal"
		if grep -q '"replaced"' "$WORK/join.json"; then say "the old credential was dead: joined $PLATFORM again as $NODE"; else say "$DATA has already joined and its credential works; not joining again"; fi
	fi
	[ -n "$AS" ] || chown -R "$ID_U:$ID_G" "$DATA"

	# 4. the Agent
	if [ "$START" = 0 ]; then
		say "the Agent was not started (--no-start); start it with: systemctl enable --now muster-agent.service"
	elif [ -z "$R" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl enable muster-agent.service >/dev/null 2>&1 || true
		systemctl is-active -q muster-agent.service || rm -f "$DATA/worker/isolation.json"
		systemctl start muster-agent.service || die "muster-agent.service did not start: see journalctl -u muster-agent"
		say "the Agent runs as muster-agent.service (systemctl status muster-agent)"
	else
		pid=$(cat "$DATA/agent.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q agent "/proc/$pid/cmdline" 2>/dev/null; then
			say "the Agent already runs (pid $pid)"
		else
			# A cgroup v2 subtree for the Agent and its replicas, handed to the muster account (as the unit's Delegate=yes does).
			CG='' ENTER=''
			for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
				if [ -f "$d/cgroup.controllers" ]; then CG=$d; break; fi
			done
			SUB=muster-agent
			[ -z "$R" ] || SUB=muster-agent-$(printf '%s' "$R" | $SHA | cut -c 1-12)
			if [ -n "$CG" ] && [ -n "$AGENT_AS" ] && mkdir -p "$CG/$SUB" 2>/dev/null; then
				for c in memory cpu pids; do
					if grep -qw "$c" "$CG/cgroup.controllers"; then echo "+$c" >"$CG/cgroup.subtree_control" 2>/dev/null || true; fi
				done
				chown "$ID_U:$ID_G" "$CG/$SUB" "$CG/$SUB/cgroup.procs" "$CG/$SUB/cgroup.subtree_control" "$CG/$SUB/cgroup.threads" 2>/dev/null && ENTER="$CG/$SUB/cgroup.procs"
			fi
			if [ -n "$AGENT_AS" ]; then
				say "the Agent runs as the muster account with CAP_SETUID, CAP_SETGID and CAP_KILL${ENTER:+ in the cgroup $SUB}"
			else
				say "this setpriv cannot pass capabilities: the Agent runs as root (its replicas still run as their own users)"
			fi
			rm -f "$DATA/worker/isolation.json"
			# shellcheck disable=SC2086,SC2016 # AGENT_AS is our own words; $$ is the inner shell's
			(cd / && exec nohup sh -c '[ -z "$1" ] || echo $$ >"$1" || exit 1; shift; exec "$@"' sh "$ENTER" env HOME="$DATA" $AGENT_AS "$BIN" agent --data-dir "$DATA" >>"$DATA/agent.log" 2>&1 </dev/null) &
			pid=$!
			printf '%s\n' "$pid" >"$DATA/agent.pid"
			sleep 1
			kill -0 "$pid" 2>/dev/null || die "the Agent stopped at once: see $DATA/agent.log"
			say "the Agent runs in the background (pid $pid, log $DATA/agent.log); here nothing restarts it after a reboot"
		fi
	fi
	# 5. replicas must not read the node's key: the Agent records who they run as when it starts.
	if [ "$START" = 1 ]; then
		i=0
		while [ ! -s "$DATA/worker/isolation.json" ] && [ "$i" -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
		if [ ! -s "$DATA/worker/isolation.json" ]; then
			die "the Agent did not say who its replicas run as within 20 s: see its log, then muster doctor --data-dir ${DATA#"$R"}"
		elif ! grep -q '"isolated": true' "$DATA/worker/isolation.json"; then
			die "the Agent runs, but its replicas can read this node's key and credential ($(sed -n 's/^  "reason": "\(.*\)",\{0,1\}$/\1/p' "$DATA/worker/isolation.json")); stop it (muster agent --stop-replicas --data-dir ${DATA#"$R"}) and fix that; muster doctor fails until then"
		fi
	fi
	say "done: $NODE joined $PLATFORM (on the Platform: muster nodes list)"
}
main "$@"
