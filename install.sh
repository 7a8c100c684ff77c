#!/bin/sh
# install.sh — installs, updates and removes muster on one machine (SPEC §12).
#
#   sh install.sh --role platform|worker --binary PATH [--sha256 HEX]
#   sh install.sh --role platform|worker --from URL --sha256 HEX [--platform-fingerprint sha256:HEX]
#        [--serve-args 'FLAGS']   (platform: written to /etc/muster/serve.env)
#        [--root DIR]             (everything inside DIR as if it were /; for tests and images)
#        [--no-start]             (install, but neither enable, start nor restart the unit)
#   sh install.sh --uninstall [--purge] [--root DIR]
#
# It owns: the system account `muster` (and, for a worker, `muster-run`, the
# account replicas run as with agent --run-as muster-run; by default each project gets a uid of its own,
# neither can read the data directory), /usr/local/bin/muster, /etc/muster/
# (serve.env, receipt.json), the role's systemd unit, and /var/lib/muster, which
# --uninstall keeps unless --purge. The receipt /etc/muster/receipt.json lists
# every file and directory a run created, so --uninstall removes exactly those.
#
# An install, in order:
#   1. refuse early: usage, not root, a receipt for another role
#   2. fetch the binary (curl) and check its SHA-256 before anything is written
#   3. stage it beside its target and ask it `version --json`: not muster → refuse
#   4. create the account (useradd --root in a root) and the directories
#   5. stage units, serve.env and receipt, then rename everything into place
#   6. start (first install) or restart (update, when running) where systemd runs
# Every change is journalled; a failure or signal before the end undoes it.
set -eu
umask 022

ACCOUNT=muster
RUN_ACCOUNT=muster-run
BIN_PATH=/usr/local/bin/muster
ETC_DIR=/etc/muster
RECEIPT=/etc/muster/receipt.json
SERVE_ENV=/etc/muster/serve.env
UNIT_DIR=/etc/systemd/system
DATA_DIR=/var/lib/muster
PLATFORM_UNIT=muster.service
AGENT_UNIT=muster-agent.service

USAGE='usage: install.sh --role platform|worker (--binary PATH | --from URL --sha256 HEX [--platform-fingerprint sha256:HEX])
                  [--serve-args FLAGS] [--root DIR] [--no-start]
       install.sh --uninstall [--purge] [--root DIR]'

say() { printf '%s\n' "$*"; }
warn() { printf 'install.sh: warning: %s\n' "$*" >&2; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
usage_die() { printf 'install.sh: %s\n%s\n' "$1" "$USAGE" >&2; exit 2; }

# ---- arguments --------------------------------------------------------------
ROLE='' BINARY='' FROM='' WANT_SHA='' PIN='' ROOT_ARG='' SERVE_ARGS='' SERVE_ARGS_SET=0
UNINSTALL=0 PURGE=0 NO_START=0
while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--*=*) val=${opt#*=}; opt=${opt%%=*}; shift; set -- "$opt" "$val" "$@" ;;
	esac
	case $opt in
	--role | --binary | --from | --sha256 | --platform-fingerprint | --root | --serve-args)
		[ $# -ge 2 ] || usage_die "$opt needs a value"
		case $opt in
		--role) ROLE=$2 ;;
		--binary) BINARY=$2 ;;
		--from) FROM=$2 ;;
		--sha256) WANT_SHA=$2 ;;
		--platform-fingerprint) PIN=$2 ;;
		--root) ROOT_ARG=$2 ;;
		--serve-args) SERVE_ARGS=$2 SERVE_ARGS_SET=1 ;;
		esac
		shift 2
		;;
	--uninstall) UNINSTALL=1; shift ;;
	--purge) PURGE=1; shift ;;
	--no-start) NO_START=1; shift ;;
	-h | --help) say "$USAGE"; exit 0 ;;
	*) usage_die "unknown argument: $opt" ;;
	esac
done

if [ "$UNINSTALL" = 1 ]; then
	[ -z "$ROLE$BINARY$FROM$WANT_SHA$PIN" ] || usage_die "--uninstall takes only --purge and --root"
	[ "$SERVE_ARGS_SET" = 0 ] || usage_die "--uninstall takes only --purge and --root"
	[ "$NO_START" = 0 ] || usage_die "--uninstall takes only --purge and --root"
else
	[ "$PURGE" = 0 ] || usage_die "--purge goes with --uninstall"
	case $ROLE in
	platform | worker) ;;
	'') usage_die "--role is required: platform or worker" ;;
	*) usage_die "unknown role '$ROLE': use --role platform or --role worker" ;;
	esac
	if [ -n "$BINARY" ] && [ -n "$FROM" ]; then usage_die "give either --binary or --from, not both"; fi
	[ -n "$BINARY$FROM" ] || usage_die "no binary: give --binary PATH (e.g. dist/muster) or --from URL --sha256 HEX"
	[ -z "$FROM" ] || [ -n "$WANT_SHA" ] || usage_die "--from needs --sha256 HEX: a download is installed only when its checksum matches"
	[ -z "$PIN" ] || [ -n "$FROM" ] || usage_die "--platform-fingerprint pins a download; it goes with --from"
	[ "$SERVE_ARGS_SET" = 0 ] || [ "$ROLE" = platform ] || usage_die "--serve-args is for --role platform"
	case $SERVE_ARGS in *'
'*) usage_die "--serve-args must be one line" ;; esac
	if [ -n "$WANT_SHA" ]; then
		WANT_SHA=$(printf '%s' "${WANT_SHA#sha256:}" | tr 'A-F' 'a-f')
		printf '%s' "$WANT_SHA" | grep -Eq '^[0-9a-f]{64}$' || usage_die "--sha256 must be 64 hex characters"
	fi
	if [ -n "$PIN" ]; then
		case $PIN in sha256:*) ;; *) usage_die "--platform-fingerprint must look like sha256:HEX" ;; esac
		PIN=$(printf '%s' "${PIN#sha256:}" | tr -d ':' | tr 'A-F' 'a-f')
		printf '%s' "$PIN" | grep -Eq '^[0-9a-f]{64}$' || usage_die "--platform-fingerprint must be sha256: and 64 hex characters"
	fi
fi

# ---- where: R prefixes every path; empty means this machine -------------------
R=''
if [ -n "$ROOT_ARG" ]; then
	[ -d "$ROOT_ARG" ] || die "--root $ROOT_ARG is not a directory"
	R=$(cd "$ROOT_ARG" && pwd -P)
	[ "$R" != / ] || R=''
fi
if [ "$(id -u)" -ne 0 ]; then
	[ -n "$R" ] || die "must run as root to install into this machine (try: sudo sh install.sh ...); --root DIR installs into a directory instead"
	die "--root still needs root: the account is created with useradd --root and files are owned by it"
fi

# systemd is only ever asked about this machine, never about a --root.
LIVE_SYSTEMD=0
if [ -z "$R" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then LIVE_SYSTEMD=1; fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/muster-install.XXXXXX") || die "cannot create a temporary directory"
JOURNAL=$WORK/journal
: >"$JOURNAL"
COMMITTED=0

# ---- helpers -----------------------------------------------------------------
file_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d ' ' -f 1
	else openssl dgst -sha256 -r "$1" | cut -d ' ' -f 1; fi
}
stdin_sha256() {
	if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -d ' ' -f 1
	else openssl dgst -sha256 -r | cut -d ' ' -f 1; fi
}
# `timeout --foreground` keeps the command in our process group, so a Ctrl-C
# still reaches it (plain timeout moves it out of the terminal's reach).
with_timeout() {
	if timeout --foreground 1 true >/dev/null 2>&1; then timeout --foreground "$@"; else shift; "$@"; fi
}
errtext() { tr '\n' ' ' <"$WORK/err" | sed 's/ *$//'; }
journal() { printf '%s %s\n' "$1" "$2" >>"$JOURNAL"; }
# shellcheck disable=SC2317 # reached from the EXIT trap
reverse_lines() { awk '{ l[NR] = $0 } END { for (i = NR; i > 0; i--) print l[i] }'; }

account_exists() { # [NAME]
	ae_name=${1:-$ACCOUNT}
	if [ -n "$R" ]; then grep -q "^$ae_name:" "$R/etc/passwd" 2>/dev/null
	else id -u "$ae_name" >/dev/null 2>&1; fi
}
group_exists() { # [NAME]
	ge_name=${1:-$ACCOUNT}
	if [ -n "$R" ]; then grep -q "^$ge_name:" "$R/etc/group" 2>/dev/null
	else getent group "$ge_name" >/dev/null 2>&1; fi
}
# useradd/userdel/groupdel/groupadd, inside the root when there is one.
acct() {
	acct_cmd=$1
	shift
	if [ -n "$R" ]; then "$acct_cmd" --root "$R" "$@"; else "$acct_cmd" "$@"; fi
}
account_ids() {
	if [ -n "$R" ]; then
		ACC_UID=$(awk -F: -v n="$ACCOUNT" '$1 == n { print $3; exit }' "$R/etc/passwd")
		ACC_GID=$(awk -F: -v n="$ACCOUNT" '$1 == n { print $4; exit }' "$R/etc/passwd")
	else
		ACC_UID=$(id -u "$ACCOUNT") ACC_GID=$(id -g "$ACCOUNT")
	fi
	if [ -z "$ACC_UID" ] || [ -z "$ACC_GID" ]; then die "cannot read the uid and gid of account $ACCOUNT"; fi
}

# Creates a directory and any missing parents, journalling each one created.
CREATED_DIRS=''
ensure_dir() {
	[ ! -d "$1" ] || return 0
	if [ -e "$1" ] || [ -L "$1" ]; then die "cannot create directory $1: something that is not a directory is in the way"; fi
	ensure_dir "$(dirname "$1")"
	mkdir "$1" 2>"$WORK/err" || die "cannot create directory $1: $(errtext)"
	journal dir "$1"
	chmod 0755 "$1"
	[ "$1" = "$R$DATA_DIR" ] || CREATED_DIRS="$CREATED_DIRS ${1#"$R"}"
}

# A target must be absent or a plain file, so a rename can replace it.
check_target() {
	if [ -L "$1" ] || { [ -e "$1" ] && [ ! -f "$1" ]; }; then
		die "$1 exists and is not a regular file; move it away and run again"
	fi
}

# Copies SOURCE to a hidden file beside TARGET (same filesystem, so the final
# rename is atomic); sets STAGED.
stage() { # TARGET SOURCE MODE
	STAGED=$(dirname "$1")/.$(basename "$1").muster-new.$$
	journal file "$STAGED"
	cp "$2" "$STAGED" 2>"$WORK/err" || die "cannot write $STAGED: $(errtext)"
	chown 0:0 "$STAGED" || die "cannot set the owner of $STAGED"
	chmod "$3" "$STAGED" || die "cannot set the mode of $STAGED"
}

# Renames a staged file over its target; a replaced file is kept (hard link)
# until the install has finished, so a rollback can put it back.
place() { # STAGED TARGET
	if [ -e "$2" ]; then
		ln -f "$2" "$2.muster-old.$$" 2>/dev/null || cp -p "$2" "$2.muster-old.$$" || die "cannot back up $2"
		journal restore "$2"
	else
		journal file "$2"
	fi
	mv -f "$1" "$2" 2>"$WORK/err" || die "cannot install $2: $(errtext)"
}

# shellcheck disable=SC2317 # reached from the EXIT trap
rollback() {
	reverse_lines <"$JOURNAL" >"$WORK/undo"
	while read -r op path; do
		case $op in
		file) rm -f "$path" ;;
		dir) rmdir "$path" 2>/dev/null ;;
		restore) [ ! -e "$path.muster-old.$$" ] || { rm -f "$path" && mv -f "$path.muster-old.$$" "$path"; } ;;
		user) acct userdel "$path" 2>/dev/null ;;
		group) ! group_exists "$path" || acct groupdel "$path" 2>/dev/null ;;
		esac
	done <"$WORK/undo"
}

# shellcheck disable=SC2317 # reached from the EXIT trap
on_exit() {
	status=$?
	set +e
	if [ "$status" -ne 0 ] && [ "$COMMITTED" = 0 ] && [ -s "$JOURNAL" ]; then
		printf 'install.sh: nothing was changed: undoing this run\n' >&2
		rollback
	fi
	rm -rf "$WORK"
	exit "$status"
}
trap on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the receipt (written by this script, one fact per line, so sh can read it)
RCPT=$R$RECEIPT
receipt_value() { # KEY → scalar
	sed -n "s/^  \"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}\$/\1/p" "$RCPT" | head -n 1
}
receipt_list() { # KEY → one array element a line
	sed -n "s/^  \"$1\": \[\(.*\)\],\{0,1\}\$/\1/p" "$RCPT" | tr ',' '\n' | sed 's/^ *"//; s/"$//' | grep -v '^$' || true
}
receipt_files() { # → PATH SHA256 a line
	sed -n 's/^    {"path": "\([^"]*\)", "sha256": "\([0-9a-f]*\)"},\{0,1\}$/\1 \2/p' "$RCPT"
}
json_list() { # WORDS → "a", "b"
	json_sep=''
	for w in "$@"; do printf '%s"%s"' "$json_sep" "$w"; json_sep=', '; done
}
safe_path() { # refuses receipt paths that could escape the root
	case $1 in /*) ;; *) die "receipt $RCPT lists a relative path '$1'; refusing to remove it" ;; esac
	case $1 in *..*) die "receipt $RCPT lists '$1'; refusing to remove it" ;; esac
}

# ---- removal -----------------------------------------------------------------
uninstall() {
	[ -f "$RCPT" ] || die "no receipt at $RCPT, so nothing is removed: --uninstall removes exactly what an install recorded there. To remove muster by hand: systemctl disable --now $PLATFORM_UNIT $AGENT_UNIT; rm $BIN_PATH $UNIT_DIR/$PLATFORM_UNIT $UNIT_DIR/$AGENT_UNIT; rm -r $ETC_DIR; userdel $ACCOUNT; and rm -r $DATA_DIR for the data"
	u_role=$(receipt_value role)
	case $u_role in platform | worker) ;; *) die "receipt $RCPT is unreadable (no role); it must be the file install.sh wrote" ;; esac
	u_data=$(receipt_value dataDir)
	u_account=$(receipt_value account)
	[ "$u_account" = "$ACCOUNT" ] || die "receipt $RCPT names account '$u_account'; expected $ACCOUNT"

	for u in $(receipt_list units); do
		if [ "$LIVE_SYSTEMD" = 1 ]; then
			systemctl disable --now "$u" >/dev/null 2>&1 || warn "systemctl disable --now $u failed"
		fi
		# Disabling is the wants/requires links; remove any left (offline roots).
		for link in "$R$UNIT_DIR"/*.wants/"$u" "$R$UNIT_DIR"/*.requires/"$u"; do
			if [ -L "$link" ]; then rm -f "$link"; rmdir "$(dirname "$link")" 2>/dev/null || true; fi
		done
		if [ "$LIVE_SYSTEMD" = 1 ]; then say "stopped and disabled $u"; else say "disabled $u"; fi
	done
	# The Agent's replicas outlive it (KillMode=process): stop them on purpose, as root, before the binary goes.
	if [ "$u_role" = worker ] && [ -z "$R" ] && [ -x "$BIN_PATH" ] && [ -d "$u_data/worker" ]; then
		if "$BIN_PATH" agent --stop-replicas --data-dir "$u_data" >"$WORK/out" 2>"$WORK/err"; then say "$(cat "$WORK/out")"
		else warn "could not stop the replicas: $(errtext)"; fi
	fi
	# The cgroup the bootstrap line made for an Agent without systemd (empty once the Agent and its replicas are gone).
	if [ "$u_role" = worker ]; then
		u_sub=muster-agent
		[ -z "$R" ] || u_sub=muster-agent-$(printf '%s' "$R" | stdin_sha256 | cut -c 1-12)
		for u_cg in /sys/fs/cgroup /sys/fs/cgroup/unified; do
			[ -d "$u_cg/$u_sub" ] || continue
			rmdir "$u_cg/$u_sub/agent" 2>/dev/null || true
			rmdir "$u_cg/$u_sub" 2>/dev/null || true
		done
	fi
	receipt_files >"$WORK/files"
	while read -r path sum; do
		safe_path "$path"
		if [ -e "$R$path" ] || [ -L "$R$path" ]; then
			if [ -f "$R$path" ] && [ "$(file_sha256 "$R$path")" != "$sum" ]; then
				say "removed $path (changed since it was installed)"
			else
				say "removed $path"
			fi
			rm -f "$R$path" || die "cannot remove $R$path"
		fi
	done <"$WORK/files"
	if [ "$LIVE_SYSTEMD" = 1 ]; then
		systemctl daemon-reload || warn "systemctl daemon-reload failed"
		# A unit that had failed (a revoked node's Agent) stays listed as failed until this.
		for u in $(receipt_list units); do systemctl reset-failed "$u" >/dev/null 2>&1 || true; done
	fi

	if [ "$(receipt_value accountCreated)" != true ]; then
		say "kept account $ACCOUNT: it existed before install.sh ran"
	elif account_exists; then
		acct userdel "$ACCOUNT" 2>"$WORK/err" || die "cannot remove account $ACCOUNT: $(errtext) (is a muster process still running as $ACCOUNT?); run --uninstall again once it has stopped"
		say "removed account $ACCOUNT"
	fi
	if [ "$(receipt_value groupCreated)" = true ] && group_exists; then
		acct groupdel "$ACCOUNT" 2>"$WORK/err" || die "cannot remove group $ACCOUNT: $(errtext)"
	fi
	if [ "$(receipt_value runAccountCreated)" = true ] && account_exists "$RUN_ACCOUNT"; then
		if acct userdel "$RUN_ACCOUNT" 2>"$WORK/err"; then
			say "removed account $RUN_ACCOUNT"
			! group_exists "$RUN_ACCOUNT" || acct groupdel "$RUN_ACCOUNT" 2>/dev/null || true
		else
			warn "cannot remove account $RUN_ACCOUNT: $(errtext) (a replica may still run as it)"
		fi
	fi

	if [ "$PURGE" = 1 ]; then
		safe_path "$u_data"
		[ "$u_data" != / ] || die "receipt names / as the data directory; refusing to purge it"
		rm -rf "$R$u_data" || die "cannot remove $R$u_data"
		say "purged $u_data"
	fi
	# Directories this muster created, deepest first; non-empty ones stay.
	{ receipt_list dirs; say "$ETC_DIR"; } | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f 2- >"$WORK/dirs"
	rm -f "$RCPT" || die "cannot remove $RCPT"
	while read -r d; do
		safe_path "$d"
		rmdir "$R$d" 2>/dev/null || true
	done <"$WORK/dirs"
	if [ "$PURGE" = 0 ] && [ -d "$R$u_data" ]; then
		say "kept the data directory $u_data (remove it with --uninstall --purge, or rm -r)"
	fi
	say "muster ($u_role) is uninstalled${R:+ from $R}"
}

if [ "$UNINSTALL" = 1 ]; then
	uninstall
	exit 0
fi

# ---- install: 1. refuse early --------------------------------------------------
PREV_ROLE=''
if [ -f "$RCPT" ]; then
	PREV_ROLE=$(receipt_value role)
	case $PREV_ROLE in platform | worker) ;; *) die "receipt $RCPT is unreadable (no role); remove it by hand or restore it" ;; esac
	[ "$PREV_ROLE" = "$ROLE" ] || die "this machine is installed as $PREV_ROLE; a role cannot be changed in place. Run install.sh --uninstall${R:+ --root $R} first (it keeps $DATA_DIR), then install --role $ROLE"
fi
if [ "$ROLE" = platform ]; then UNITS=$PLATFORM_UNIT; else UNITS=$AGENT_UNIT; fi
for t in "$R$BIN_PATH" "$R$UNIT_DIR/$UNITS" "$R$SERVE_ENV" "$RCPT"; do check_target "$t"; done

# ---- 2. the binary, checked before anything is written -----------------------------
# With --platform-fingerprint the download must come from the Platform. The pin
# is one of:
#  - the Platform CA's: the SHA-256 of a CA certificate's SubjectPublicKeyInfo.
#    openssl s_client reads the chain the server sends; the CA whose key matches
#    becomes curl's only trust anchor (--cacert): the download connection must
#    present a certificate that CA issued for this host;
#  - a certificate's own (SHA-256 of the DER; a listener from before the CA).
#    curl can pin a public key (--pinnedpubkey) but not a certificate, so its
#    public-key hash is derived and pinned; the CA check is off (--insecure)
#    because the pin replaces it: only the holder of that key completes the
#    handshake.
pin_download_key() {
	command -v openssl >/dev/null 2>&1 || die "--platform-fingerprint needs openssl to read the server's certificate"
	case $FROM in https://*) ;; *) die "--platform-fingerprint needs an https:// URL" ;; esac
	p_hostport=${FROM#https://}
	p_hostport=${p_hostport%%/*}
	p_hostport=${p_hostport%%\?*}
	p_hostport=${p_hostport##*@}
	case $p_hostport in
	\[*\]:*) p_host=${p_hostport%%]*}; p_host=${p_host#[}; p_port=${p_hostport##*]:} ;;
	\[*\]) p_host=${p_hostport#[}; p_host=${p_host%]}; p_port=443 ;;
	*:*) p_host=${p_hostport%:*}; p_port=${p_hostport##*:} ;;
	*) p_host=$p_hostport; p_port=443 ;;
	esac
	case $p_host in
	*:*) p_connect="[$p_host]:$p_port" ;;
	*) p_connect="$p_host:$p_port" ;;
	esac
	case $p_host in
	*[a-zA-Z]*) case $p_host in *:*) p_sni='' ;; *) p_sni=$p_host ;; esac ;;
	*) p_sni='' ;;
	esac
	if [ -n "$p_sni" ]; then
		with_timeout 30 openssl s_client -connect "$p_connect" -servername "$p_sni" -showcerts </dev/null >"$WORK/s_client" 2>"$WORK/err" || true
	else
		with_timeout 30 openssl s_client -connect "$p_connect" -noservername -showcerts </dev/null >"$WORK/s_client" 2>"$WORK/err" || true
	fi
	# one file per certificate of the chain, in the order sent: cert.1 is the server's own
	awk -v dir="$WORK" '/-----BEGIN CERTIFICATE-----/ { n++; f = 1 } f { print > (dir "/cert." n) } /-----END CERTIFICATE-----/ { f = 0 }' "$WORK/s_client"
	[ -s "$WORK/cert.1" ] || die "cannot read the TLS certificate of $p_connect: $(errtext); nothing was installed"
	p_got=$(openssl x509 -in "$WORK/cert.1" -outform DER | stdin_sha256)
	if [ "$p_got" = "$PIN" ]; then
		PIN_KEY=$(openssl x509 -in "$WORK/cert.1" -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | openssl base64 -A)
		[ -n "$PIN_KEY" ] || die "cannot derive the public key of the certificate of $p_connect"
		return 0
	fi
	p_i=2
	while [ -s "$WORK/cert.$p_i" ]; do
		p_key=$(openssl x509 -in "$WORK/cert.$p_i" -pubkey -noout | openssl pkey -pubin -outform DER | stdin_sha256)
		if [ "$p_key" = "$PIN" ]; then
			cp "$WORK/cert.$p_i" "$WORK/pinned-ca.pem"
			return 0
		fi
		p_i=$((p_i + 1))
	done
	die "the certificate of $p_connect is sha256:$p_got, not the pinned sha256:$PIN, and no CA it sent has that key; nothing was installed"
}

if [ -n "$FROM" ]; then
	command -v curl >/dev/null 2>&1 || die "--from needs curl"
	case $FROM in https://* | http://*) ;; *) usage_die "--from needs an http:// or https:// URL" ;; esac
	SOURCE=$WORK/download
	if [ -n "$PIN" ]; then
		PIN_KEY=''
		pin_download_key
		if [ -n "$PIN_KEY" ]; then
			set -- --proto =https --insecure --pinnedpubkey "sha256//$PIN_KEY"
		else
			set -- --proto =https --cacert "$WORK/pinned-ca.pem"
		fi
	else
		# Plain http is allowed: the SHA-256 below is what makes the download trusted.
		set -- --proto =https,http --location --proto-redir =https,http --max-redirs 5
	fi
	curl --fail --silent --show-error --connect-timeout 20 --max-time 900 --retry 2 \
		"$@" --output "$SOURCE" "$FROM" 2>"$WORK/err" || die "download of $FROM failed: $(errtext); nothing was installed"
	SOURCE_NAME=$FROM
else
	[ -e "$BINARY" ] || die "binary $BINARY does not exist (build it with: bun run build)"
	[ -f "$BINARY" ] || die "binary $BINARY is not a regular file"
	[ -r "$BINARY" ] || die "binary $BINARY is not readable"
	SOURCE=$BINARY
	SOURCE_NAME=$BINARY
fi
if [ -n "$WANT_SHA" ]; then
	GOT_SHA=$(file_sha256 "$SOURCE")
	[ "$GOT_SHA" = "$WANT_SHA" ] || die "checksum mismatch for $SOURCE_NAME: expected $WANT_SHA, got $GOT_SHA; nothing was installed"
fi

# ---- 3. stage the binary and ask it what it is --------------------------------------
ensure_dir "$R$(dirname "$BIN_PATH")"
stage "$R$BIN_PATH" "$SOURCE" 0700
STAGED_BIN=$STAGED
VERSION_OUT=$(with_timeout 30 "$STAGED_BIN" version --json 2>"$WORK/err") ||
	die "$SOURCE_NAME is not a muster binary: 'version --json' failed: $(errtext)"
VERSION=$(printf '%s\n' "$VERSION_OUT" | sed -n 's/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
printf '%s' "$VERSION" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$' ||
	die "$SOURCE_NAME is not a muster binary: 'version --json' answered '$VERSION_OUT'"
chmod 0755 "$STAGED_BIN"
PREV_VERSION=''
[ -z "$PREV_ROLE" ] || PREV_VERSION=$(receipt_value version)

# ---- 4. account and directories -------------------------------------------------------
if [ -n "$R" ]; then
	# useradd --root edits DIR/etc/passwd, group, shadow and gshadow: an empty root
	# gets minimal ones holding only root, as a fresh system has.
	ensure_dir "$R/etc"
	for f in passwd:0644:'root:x:0:0:root:/root:/bin/sh' group:0644:'root:x:0:' \
		shadow:0600:'root:*::0:99999:7:::' gshadow:0600:'root:*::'; do
		s_name=${f%%:*} s_rest=${f#*:}
		s_mode=${s_rest%%:*} s_line=${s_rest#*:}
		[ ! -e "$R/etc/$s_name" ] || continue
		journal file "$R/etc/$s_name"
		printf '%s\n' "$s_line" >"$R/etc/$s_name" || die "cannot write $R/etc/$s_name"
		chmod "$s_mode" "$R/etc/$s_name"
	done
fi

ACCOUNT_CREATED=false GROUP_CREATED=false
if [ -n "$PREV_ROLE" ]; then
	[ "$(receipt_value accountCreated)" != true ] || ACCOUNT_CREATED=true
	[ "$(receipt_value groupCreated)" != true ] || GROUP_CREATED=true
fi
NOLOGIN=/usr/sbin/nologin
[ -x "$R$NOLOGIN" ] || [ ! -x "$R/sbin/nologin" ] || NOLOGIN=/sbin/nologin
if ! account_exists; then
	if [ -n "$R" ]; then
		# useradd's (and a rollback's userdel's) backups and lock file belong to
		# this run in a root, too; journalled first so they are undone last.
		for f in passwd- group- shadow- gshadow- .pwd.lock; do
			[ -e "$R/etc/$f" ] || journal file "$R/etc/$f"
		done
	fi
	if group_exists; then
		set -- --gid "$ACCOUNT"
	else
		set -- --user-group
		GROUP_CREATED=true
		journal group "$ACCOUNT"
	fi
	journal user "$ACCOUNT"
	acct useradd --system "$@" --home-dir "$DATA_DIR" --no-create-home --shell "$NOLOGIN" \
		--comment 'muster service account' "$ACCOUNT" 2>"$WORK/err" ||
		die "cannot create account $ACCOUNT: $(errtext)"
	ACCOUNT_CREATED=true
	ACCOUNT_NOTE=created
else
	ACCOUNT_NOTE=existing
fi
account_ids

# A worker's replicas run as a uid of their project's (the Agent picks them), or as $RUN_ACCOUNT when the
# Agent is given --run-as $RUN_ACCOUNT; neither can enter the data directory (docs/security.md).
RUN_ACCOUNT_CREATED=false
if [ "$ROLE" = worker ]; then
	[ -z "$PREV_ROLE" ] || [ "$(receipt_value runAccountCreated)" != true ] || RUN_ACCOUNT_CREATED=true
	if ! account_exists "$RUN_ACCOUNT"; then
		if group_exists "$RUN_ACCOUNT"; then
			set -- --gid "$RUN_ACCOUNT"
		else
			set -- --user-group
			journal group "$RUN_ACCOUNT"
		fi
		journal user "$RUN_ACCOUNT"
		acct useradd --system "$@" --home-dir /nonexistent --no-create-home --shell "$NOLOGIN" \
			--comment 'muster replicas' "$RUN_ACCOUNT" 2>"$WORK/err" ||
			die "cannot create account $RUN_ACCOUNT: $(errtext)"
		RUN_ACCOUNT_CREATED=true
	fi
fi

ensure_dir "$R$ETC_DIR"
ensure_dir "$R$UNIT_DIR"
ensure_dir "$R$DATA_DIR"
# A data directory kept from an earlier install may belong to an account that
# was removed since; hand all of it to the account as it is now.
if [ "$(stat -c %u:%g "$R$DATA_DIR")" != "$ACC_UID:$ACC_GID" ]; then
	chown -R "$ACC_UID:$ACC_GID" "$R$DATA_DIR" || die "cannot hand $R$DATA_DIR to $ACCOUNT"
fi
chmod 0700 "$R$DATA_DIR" || die "cannot set the mode of $R$DATA_DIR"

# ---- 5. units, serve.env, receipt -------------------------------------------------------
# CapabilityBoundingSet stays empty unless serve is told to listen below 1024.
low_port() {
	lp_prev=''
	set -f
	# shellcheck disable=SC2086 # word splitting is the point: systemd splits $MUSTER_SERVE_ARGS the same way
	set -- $1
	set +f
	for w in "$@"; do
		case $lp_prev:$w in
		--port:* | --enrollment-port:*) lp_n=$w ;;
		*:--port=* | *:--enrollment-port=*) lp_n=${w#*=} ;;
		*) lp_n='' ;;
		esac
		lp_prev=$w
		case $lp_n in '' | *[!0-9]*) continue ;; esac
		[ "$lp_n" -ge 1024 ] || [ "$lp_n" -eq 0 ] || return 0
	done
	return 1
}

HARDENING="NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=$DATA_DIR
PrivateTmp=yes
ProtectHome=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
RestrictSUIDSGID=yes
LockPersonality=yes
UMask=0077"

if [ "$ROLE" = platform ]; then
	ENV_KEEP=0
	if [ "$SERVE_ARGS_SET" = 0 ] && [ -f "$R$SERVE_ENV" ]; then
		# An update keeps the operator's flags.
		ENV_KEEP=1
		SERVE_ARGS=$(sed -n 's/^MUSTER_SERVE_ARGS=//p' "$R$SERVE_ENV" | tail -n 1)
		SERVE_ARGS=${SERVE_ARGS#\"}
		SERVE_ARGS=${SERVE_ARGS%\"}
	fi
	if [ "$ENV_KEEP" = 0 ]; then
		cat >"$WORK/serve.env" <<EOF
# Flags for \`muster serve\`, read by $PLATFORM_UNIT (EnvironmentFile=).
# Example: MUSTER_SERVE_ARGS=--port 7380 --enrollment-port 7443 --public-url https://platform.example:7380
# After changing it: systemctl restart $PLATFORM_UNIT. A --port below 1024 also
# needs the unit to keep CAP_NET_BIND_SERVICE: run install.sh again to rewrite it.
MUSTER_SERVE_ARGS=$SERVE_ARGS
EOF
		stage "$R$SERVE_ENV" "$WORK/serve.env" 0600
		STAGED_ENV=$STAGED
	fi
	if low_port "$SERVE_ARGS"; then
		CAPS="CapabilityBoundingSet=CAP_NET_BIND_SERVICE
AmbientCapabilities=CAP_NET_BIND_SERVICE"
	else
		CAPS="CapabilityBoundingSet="
	fi
	cat >"$WORK/unit" <<EOF
# Installed by install.sh (muster $VERSION); install.sh --uninstall removes it.
[Unit]
Description=muster Platform
After=network-online.target
Wants=network-online.target

[Service]
Type=simple
User=$ACCOUNT
Group=$ACCOUNT
EnvironmentFile=$SERVE_ENV
ExecStart=$BIN_PATH serve --data-dir $DATA_DIR \$MUSTER_SERVE_ARGS
# Swaps in the binary now at $BIN_PATH without closing a port (SPEC §16.8).
ExecReload=/bin/kill -HUP \$MAINPID
Restart=on-failure
RestartSec=5s
# One open file per connected Agent (each holds a keep-alive connection): room for a large fleet.
LimitNOFILE=1048576
$HARDENING
ProtectControlGroups=yes
$CAPS

[Install]
WantedBy=multi-user.target
EOF
else
	cat >"$WORK/unit" <<EOF
# Installed by install.sh (muster $VERSION); install.sh --uninstall removes it.
# Starts only once \`muster worker join\` has written the Agent's configuration.
[Unit]
Description=muster Agent
After=network-online.target
Wants=network-online.target
ConditionPathExists=$DATA_DIR/worker/agent.json

[Service]
Type=simple
User=$ACCOUNT
Group=$ACCOUNT
ExecStart=$BIN_PATH agent --data-dir $DATA_DIR
Restart=on-failure
RestartSec=5s
# Replicas outlive the Agent (a restart or an update stops only the Agent; the next one adopts them).
KillMode=process
# The unit's cgroup is the Agent's to divide: each replica gets a cgroup of its own below it, with the
# project's cpu.max and memory.max, and a stop kills everything in it (so no ProtectControlGroups= here).
Delegate=yes
# Exit status 3: the Platform refused this node's credential for good (revoked,
# removed, rebound); restarting cannot help. \`muster worker join\` again, then start it.
RestartPreventExitStatus=3
$HARDENING
# Replicas run as a uid of their project's (or --run-as USER): the Agent switches to it and signals them (it clears these for every replica).
CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL
AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_KILL

[Install]
WantedBy=multi-user.target
EOF
fi
stage "$R$UNIT_DIR/$UNITS" "$WORK/unit" 0644
STAGED_UNIT=$STAGED

# An update of a running Platform swaps its engine in place (systemctl reload:
# no port closes, no request fails) when only the binary changes: the unit it
# runs under already has ExecReload= (so the running version can swap), its
# lines are otherwise the same, and serve.env is kept. Anything else restarts.
RELOAD=0
if [ "$ROLE" = platform ] && [ -n "$PREV_ROLE" ] && [ "$ENV_KEEP" = 1 ] && [ -f "$R$UNIT_DIR/$UNITS" ] &&
	grep -q '^ExecReload=' "$R$UNIT_DIR/$UNITS" &&
	[ "$(grep -v '^#' "$R$UNIT_DIR/$UNITS")" = "$(grep -v '^#' "$WORK/unit")" ]; then
	RELOAD=1
fi

# The receipt: every file with its SHA-256 as installed; directories created by
# any run so far (the data directory is its own entry); the account and whether
# install.sh created it, so removal never deletes an account it did not make.
FILES="$BIN_PATH $(file_sha256 "$STAGED_BIN")
$UNIT_DIR/$UNITS $(file_sha256 "$STAGED_UNIT")"
if [ "$ROLE" = platform ]; then
	if [ "$ENV_KEEP" = 0 ]; then
		FILES="$FILES
$SERVE_ENV $(file_sha256 "$STAGED_ENV")"
	elif [ -n "$PREV_ROLE" ] && receipt_files | grep -q "^$SERVE_ENV "; then
		FILES="$FILES
$SERVE_ENV $(file_sha256 "$R$SERVE_ENV")"
	fi
fi
DIRS=''
if [ -n "$PREV_ROLE" ]; then DIRS=$(receipt_list dirs | tr '\n' ' '); fi
for d in $CREATED_DIRS; do
	case " $DIRS " in *" $d "*) ;; *) DIRS="$DIRS $d" ;; esac
done
# shellcheck disable=SC2086 # DIRS is a list of our own space-free paths
DIRS_JSON=$(json_list $DIRS)
{
	say '{'
	say '  "receiptVersion": 1,'
	say "  \"role\": \"$ROLE\","
	say "  \"version\": \"$VERSION\","
	say "  \"installedAt\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
	say "  \"account\": \"$ACCOUNT\","
	say "  \"uid\": $ACC_UID,"
	say "  \"gid\": $ACC_GID,"
	say "  \"accountCreated\": $ACCOUNT_CREATED,"
	say "  \"groupCreated\": $GROUP_CREATED,"
	if [ "$ROLE" = worker ]; then
		say "  \"runAccount\": \"$RUN_ACCOUNT\","
		say "  \"runAccountCreated\": $RUN_ACCOUNT_CREATED,"
	fi
	say "  \"dataDir\": \"$DATA_DIR\","
	say "  \"binary\": \"$BIN_PATH\","
	say "  \"units\": [\"$UNITS\"],"
	say "  \"dirs\": [$DIRS_JSON],"
	say '  "files": ['
	printf '%s\n' "$FILES" | awk 'NR > 1 { print prev "," } { prev = "    {\"path\": \"" $1 "\", \"sha256\": \"" $2 "\"}" } END { print prev }'
	say '  ]'
	say '}'
} >"$WORK/receipt.json"
stage "$RCPT" "$WORK/receipt.json" 0644
STAGED_RCPT=$STAGED

# ---- commit: renames only; the receipt goes last --------------------------------------
place "$STAGED_BIN" "$R$BIN_PATH"
[ "$ROLE" != platform ] || [ "$ENV_KEEP" = 1 ] || place "$STAGED_ENV" "$R$SERVE_ENV"
place "$STAGED_UNIT" "$R$UNIT_DIR/$UNITS"
place "$STAGED_RCPT" "$RCPT"
COMMITTED=1
grep '^restore ' "$JOURNAL" | while read -r _ path; do rm -f "$path.muster-old.$$"; done

# ---- 6. systemd, and what to do next -------------------------------------------------
if [ -n "$PREV_ROLE" ]; then
	say "updated muster ($ROLE) ${PREV_VERSION:-?} -> $VERSION${R:+ in $R}"
else
	say "installed muster $VERSION ($ROLE)${R:+ into $R}"
fi
say "  account  $ACCOUNT (uid $ACC_UID, $ACCOUNT_NOTE, no login shell)"
[ "$ROLE" != worker ] || say "  replicas run as a uid of their project's, each in its own cgroup (or as $RUN_ACCOUNT with agent --run-as $RUN_ACCOUNT); none can read $DATA_DIR"
say "  binary   $BIN_PATH"
say "  unit     $UNIT_DIR/$UNITS"
[ "$ROLE" != platform ] || say "  flags    $SERVE_ENV"
say "  data     $DATA_DIR (0700, $ACCOUNT)"
say "  receipt  $RECEIPT"

START_FAILED=0
if [ "$NO_START" = 1 ]; then
	if [ "$LIVE_SYSTEMD" = 1 ]; then
		systemctl daemon-reload || warn "systemctl daemon-reload failed"
		# A unit that had failed (a revoked node's Agent) stays listed as failed until this.
		for u in $(receipt_list units); do systemctl reset-failed "$u" >/dev/null 2>&1 || true; done
	fi
	say "$UNITS was installed but neither enabled, started nor restarted (--no-start)"
elif [ "$LIVE_SYSTEMD" = 1 ]; then
	systemctl daemon-reload || warn "systemctl daemon-reload failed"
	if [ -n "$PREV_ROLE" ]; then
		if systemctl is-active --quiet "$UNITS"; then
			if [ "$RELOAD" = 1 ]; then
				if systemctl reload "$UNITS"; then
					say "reloaded $UNITS: the running Platform swaps to $VERSION without closing its ports; a binary that does not start leaves the old one serving (journalctl -u $UNITS)"
				else START_FAILED=1; fi
			elif systemctl restart "$UNITS"; then say "restarted $UNITS"; else START_FAILED=1; fi
		else
			say "$UNITS is not running; left stopped"
		fi
	elif systemctl enable --now "$UNITS" >/dev/null 2>&1; then
		say "enabled $UNITS"
	else
		START_FAILED=1
	fi
	[ "$START_FAILED" = 0 ] || warn "$UNITS did not start: see journalctl -u $UNITS (the installation itself is complete)"
else
	if [ -n "$R" ]; then why="installed into a --root"; else why="systemd is not running here"; fi
	say "$UNITS was installed but not enabled or started ($why)"
fi

say ''
say 'Next:'
if [ "$ROLE" = platform ]; then
	if [ "$LIVE_SYSTEMD" = 1 ] && [ "$NO_START" = 0 ] && [ "$START_FAILED" = 0 ] && [ -z "$PREV_ROLE" ]; then
		say "  the Platform runs as $PLATFORM_UNIT (systemctl status $PLATFORM_UNIT); flags go in $SERVE_ENV"
		say "  the first superadmin password is in $DATA_DIR/platform/initial-superadmin-password"
	else
		say "  systemctl enable --now $PLATFORM_UNIT"
		say "  or in the foreground: sudo -u $ACCOUNT muster serve --data-dir $DATA_DIR"
	fi
else
	say "  sudo -u $ACCOUNT muster worker join --platform-url https://HOST:PORT --node-id NAME --platform-fingerprint sha256:${PIN:-...}"
	if [ "$LIVE_SYSTEMD" = 1 ]; then
		say "  then: systemctl start $AGENT_UNIT"
	else
		say "  then: systemctl enable --now $AGENT_UNIT"
	fi
fi
exit "$START_FAILED"
