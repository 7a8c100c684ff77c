// First-boot data for a machine the Platform creates: cloud-init that installs
// the worker role with install.sh and joins this Platform. At AWS, GCP and
// Azure it holds nothing secret: the machine joins with what its cloud signs
// (`worker join --cloud-identity`). At Hetzner and DigitalOcean, which sign
// nothing, a single-use join token bound to the server sits in a root-only
// file (0600) and reaches `worker join` on stdin, never on a command line. No
// provider credential is ever written here. The
// machine lets nothing in unless told: SSH is stopped for good (unless
// --allow-ssh-inbound), and the node joins without an address (ready on
// heartbeats alone) unless --probe, when it gives its public address.
import installScript from '../../install.sh' with { type: 'text' }
import { MusterError } from '../errors.ts'

/** `text` gzipped as cloud-init reads it (level 9: the same bytes for the same text). */
export function gzipText(text: string): Uint8Array {
  return Bun.gzipSync(new TextEncoder().encode(text), { level: 9 })
}

/** What a created machine's first boot is made from. */
export interface FirstBootInputs {
  provider: string
  nodeId: string
  /** The single-use join token (Hetzner, DigitalOcean); none where the cloud signs the machine's identity. */
  token?: string
  /** The enrollment listener (https) and its certificate fingerprint to pin. */
  enrollmentUrl: string
  fingerprint: string
  /** Where install.sh downloads the binary, and its SHA-256 (checked before anything is installed). */
  binaryUrl: string
  binarySha256: string
  /** The Platform CA pin the https download is verified with, when the API's certificate comes from that CA. */
  binaryPin?: string
  role: 'general' | 'build'
  /** --probe: the node gives its public address (this one when known, else the metadata service's) so the Platform can probe it. */
  probe: boolean
  address: string | null
  /** --allow-ssh-inbound: keep the SSH daemon running. */
  ssh: boolean
}

export const FIRST_BOOT_DIR = '/root/muster-first-boot'

const JOIN_SCRIPT = `#!/bin/sh
# Runs once, as root, on first boot (cloud-init runcmd).
set -eu
cd ${FIRST_BOOT_DIR}
# shellcheck source=/dev/null
. ./join.env
# 1. install the worker role: the muster account, the binary (checksum verified; over https from the
#    Platform's own CA, verified with its pin), the Agent unit, the receipt
set --
[ -z "\${MUSTER_BINARY_PIN:-}" ] || set -- --platform-fingerprint "$MUSTER_BINARY_PIN"
sh ./install.sh --role worker --from "$MUSTER_BINARY_URL" --sha256 "$MUSTER_BINARY_SHA256" "$@"
# 2. nothing comes in that muster was not told to open: without --allow-ssh-inbound the SSH daemon stops for good
if [ "$MUSTER_SSH" != yes ]; then
	systemctl disable --now ssh.socket ssh.service >/dev/null 2>&1 || true
fi
# 3. by default the Platform never dials this node: it joins without an address and is ready on heartbeats
#    alone (the Agent listens on loopback). With --probe it gives its public address, which the Platform probes:
#    the one muster reserved for it, else what the provider's metadata service says
set -- --heartbeat-only
if [ "$MUSTER_PROBE" = yes ]; then
	ADDR=\${MUSTER_ADDRESS:-}
	if [ -z "$ADDR" ]; then
		case $MUSTER_PROVIDER in
		aws) ADDR=$(t=$(curl -fsS -m 5 -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 60' http://169.254.169.254/latest/api/token) &&
			curl -fsS -m 5 -H "X-aws-ec2-metadata-token: $t" http://169.254.169.254/latest/meta-data/public-ipv4) || ADDR='' ;;
		gcp) ADDR=$(curl -fsS -m 5 -H 'Metadata-Flavor: Google' http://metadata.google.internal/computeMetadata/v1/instance/network-interfaces/0/access-configs/0/external-ip) || ADDR='' ;;
		hetzner) ADDR=$(curl -fsS -m 5 http://169.254.169.254/hetzner/v1/metadata/public-ipv4) || ADDR='' ;;
		digitalocean) ADDR=$(curl -fsS -m 5 http://169.254.169.254/metadata/v1/interfaces/public/0/ipv4/address) || ADDR='' ;;
		esac
	fi
	[ -z "$ADDR" ] || set -- --address "$ADDR"
fi
# 4. join as the muster account, pinned to the Platform's certificate, labelled with its role. The node
#    asks its metadata service itself (--cloud-identity): at AWS, GCP and Azure for what the cloud signs,
#    nothing secret being here; at Hetzner and DigitalOcean for this server's id, the single-use token,
#    bound to it, coming on stdin from a root-only file, never on a command line. A refusal is tried
#    again for a few minutes: the Platform may not have heard its create's answer yet.
TOKEN_FILE=/dev/null
[ ! -f ./enrollment-token ] || TOKEN_FILE=./enrollment-token
n=0
until runuser -u muster -- /usr/local/bin/muster worker join --platform-url "$MUSTER_PLATFORM_URL" --node-id "$MUSTER_NODE_ID" \\
  --platform-fingerprint "$MUSTER_PLATFORM_FINGERPRINT" --data-dir /var/lib/muster --label "role=$MUSTER_ROLE" \\
  --cloud-identity "$MUSTER_PROVIDER" "$@" <"$TOKEN_FILE"; do
	n=$((n + 1))
	[ "$n" -lt "\${MUSTER_JOIN_TRIES:-20}" ] || exit 1
	sleep 15
done
# 5. a token is spent: remove it, start the Agent
rm -f ./enrollment-token
systemctl enable --now muster-agent.service
`

/**
 * install.sh without its comment-only lines (outside here-documents, whose text is what it installs):
 * the same program, about a fifth smaller once gzipped — room under EC2's 16 KB for the script to grow.
 */
export function withoutComments(script: string): string {
  let heredoc: string | null = null
  return script
    .split('\n')
    .filter((line, i) => {
      if (heredoc !== null) {
        if (line.replace(/^\t+/, '') === heredoc) heredoc = null
        return true
      }
      const opens = line.match(/<<-?\s*(['"]?)([A-Za-z_]\w*)\1/)
      if (opens && !/^\s*#/.test(line)) heredoc = opens[2]!
      return i === 0 || !/^\s*#(?!!)/.test(line)
    })
    .join('\n')
}

const INSTALL = withoutComments(installScript)

const SAFE = /^[A-Za-z0-9._~:/?#@!$&()*+,;=%[\]-]+$/

function envLine(key: string, value: string): string {
  // Shapes are checked so a value can never end the quotes it sits in.
  if (!SAFE.test(value)) throw new MusterError('invalid-request', `Cannot put ${key} into first-boot data: unexpected characters.`)
  return `${key}='${value}'`
}

const indent = (text: string, by: string) => text.replace(/\n$/, '').split('\n').map((l) => (l ? by + l : l)).join('\n')

function file(path: string, mode: string, content: string, encoding?: 'gz+b64'): string {
  const head = `  - path: ${path}\n    owner: root:root\n    permissions: '${mode}'\n`
  if (encoding) return `${head}    encoding: ${encoding}\n    content: ${content}\n`
  return `${head}    content: |\n${indent(content, '      ')}\n`
}

/** The cloud-config document (plain text; each provider encodes it its own way). */
export function firstBootData(f: FirstBootInputs): string {
  if (f.token !== undefined && !/^mjt_[a-z2-7]{16}\.[A-Za-z0-9_-]{43}$/.test(f.token)) throw new MusterError('internal', 'Unexpected join token shape.')
  if (!/^sha256:[0-9a-f]{64}$/.test(f.fingerprint) || !/^[0-9a-f]{64}$/.test(f.binarySha256)) throw new MusterError('internal', 'Unexpected fingerprint or checksum shape.')
  if (f.binaryPin !== undefined && !/^sha256:[0-9a-f]{64}$/.test(f.binaryPin)) throw new MusterError('internal', 'Unexpected pin shape.')
  const env = [
    envLine('MUSTER_PROVIDER', f.provider),
    envLine('MUSTER_NODE_ID', f.nodeId),
    envLine('MUSTER_ROLE', f.role),
    envLine('MUSTER_PLATFORM_URL', f.enrollmentUrl),
    envLine('MUSTER_PLATFORM_FINGERPRINT', f.fingerprint),
    envLine('MUSTER_BINARY_URL', f.binaryUrl),
    envLine('MUSTER_BINARY_SHA256', f.binarySha256),
    envLine('MUSTER_PROBE', f.probe ? 'yes' : 'no'),
    envLine('MUSTER_SSH', f.ssh ? 'yes' : 'no'),
    ...(f.address ? [envLine('MUSTER_ADDRESS', f.address)] : []),
    ...(f.binaryPin ? [envLine('MUSTER_BINARY_PIN', f.binaryPin)] : []),
  ].join('\n')
  // Compressed for AWS's 16 KB (cloud-init writes gz+b64 files decoded).
  const gz = (text: string) => Buffer.from(gzipText(text)).toString('base64')
  return [
    '#cloud-config',
    `# muster: install the worker role and join as ${f.nodeId}`,
    'write_files:',
    (f.token ? file(`${FIRST_BOOT_DIR}/enrollment-token`, '0600', `${f.token}\n`) : '') +
      file(`${FIRST_BOOT_DIR}/join.env`, '0600', `${env}\n`) +
      file(`${FIRST_BOOT_DIR}/install.sh`, '0700', gz(INSTALL), 'gz+b64') +
      file(`${FIRST_BOOT_DIR}/join.sh`, '0700', gz(JOIN_SCRIPT), 'gz+b64'),
    'runcmd:',
    `  - [sh, ${FIRST_BOOT_DIR}/join.sh]`,
    '',
  ].join('\n')
}
