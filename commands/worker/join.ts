import { defineCommand } from 'citty'
import { dataDirArg, intArg, jsonArg, multiArg } from '../_args.ts'
import { esc, printJson, printLine } from '../_out.ts'

export default defineCommand({
  meta: { name: 'join', description: 'Enroll this machine with a Platform over an authenticated https link' },
  args: {
    'platform-url': { type: 'string', required: true, valueHint: 'https://H[:P]', description: 'The Platform’s enrollment URL (https only)' },
    'node-id': { type: 'string', required: true, valueHint: 'NAME', description: 'This node’s name, as the enrollment was issued' },
    'platform-fingerprint': { type: 'string', valueHint: 'sha256:HEX', description: 'Pin of the Platform CA (`fingerprint` in `muster nodes platform`)' },
    'platform-ca-file': { type: 'string', valueHint: 'FILE', description: 'Verify the Platform with this CA instead of the system roots; beside --platform-fingerprint, the CA of an API with its own --tls-cert' },
    'enrollment-token-file': { type: 'string', valueHint: 'FILE', description: 'File holding the join token (else $MUSTER_ENROLLMENT_TOKEN, stdin, or a prompt)' },
    'enrollment-token': { type: 'string', valueHint: 'mjt_…', description: 'The join token on argv (lands in shell history; prefer the file)' },
    address: { type: 'string', valueHint: 'ADDR', description: 'Address the Platform reaches this node by (repeatable; default: first routable IPv4 and localhost)' },
    port: { type: 'string', valueHint: 'PORT', default: '7381', description: 'Port the Agent listens on' },
    'heartbeat-only': { type: 'boolean', description: 'Give no address: the Platform never dials this node, which is ready on heartbeats alone (the Agent listens on loopback)' },
    'cloud-identity': { type: 'string', valueHint: 'aws|gcp|azure|hetzner|digitalocean', description: 'On a machine the Platform created: join with what its cloud signs (aws, gcp, azure; no token), or bind the token to this server (hetzner, digitalocean); asks the metadata service itself' },
    label: { type: 'string', valueHint: 'KEY=VALUE', description: 'A label this node carries, like role=build (repeatable; sent at enroll; a nodes file on the Platform wins)' },
    ...dataDirArg,
    ...jsonArg,
  },
  async run({ args, rawArgs }) {
    const { checkName, checkFingerprint, checkUrl, labelArgs } = await import('../_args.ts')
    const labels = await labelArgs(rawArgs, 'label')
    checkUrl(args['platform-url'], '--platform-url')
    checkName(args['node-id'], '--node-id')
    checkFingerprint(args['platform-fingerprint'], '--platform-fingerprint')
    const { CLOUD_IDENTITIES } = await import('../../src/agent/cloud-metadata.ts')
    const cloudIdentity = args['cloud-identity']
    if (cloudIdentity !== undefined && !(CLOUD_IDENTITIES as readonly string[]).includes(cloudIdentity)) {
      const { UsageError } = await import('../_args.ts')
      throw new UsageError(`--cloud-identity ${cloudIdentity}: expected one of ${CLOUD_IDENTITIES.join(', ')}`)
    }
    const { joinPlatform } = await import('../../src/agent/join.ts')
    const { resolveDataDir } = await import('../../src/datadir.ts')
    const { readSecret } = await import('../_secret.ts')
    const r = await joinPlatform({
      dataDir: resolveDataDir(args['data-dir']),
      platformUrl: args['platform-url'],
      nodeId: args['node-id'],
      fingerprint: args['platform-fingerprint'],
      caFile: args['platform-ca-file'],
      addresses: multiArg(rawArgs, 'address'),
      port: intArg(args, 'port', 1, 65535),
      heartbeatOnly: args['heartbeat-only'] === true,
      labels,
      ...(cloudIdentity ? { cloudIdentity: cloudIdentity as (typeof CLOUD_IDENTITIES)[number] } : {}),
      readToken: () =>
        readSecret({
          what: 'enrollment token',
          file: { value: args['enrollment-token-file'], flag: '--enrollment-token-file' },
          argv: { value: args['enrollment-token'], flag: '--enrollment-token' },
          env: 'MUSTER_ENROLLMENT_TOKEN',
        }),
    })
    // Run as root (sudo) on a data directory the Agent's account owns: what the join wrote stays readable by the Agent.
    const { keepOwner } = await import('../../src/agent/keep-owner.ts')
    keepOwner(r.dataDir)
    if (args.json) return printJson({ nodeId: r.nodeId, agentId: r.agentId, dataDir: r.dataDir, start: r.start, ...(r.replaced ? { replaced: r.replaced } : {}) })
    const { consola } = await import('consola')
    const done = r.alreadyJoined
      ? esc`${r.dataDir} had already joined as ${r.nodeId} and its credential works; nothing to do.`
      : r.replaced
        ? esc`The old credential was dead (${r.replaced}); joined again as ${r.nodeId} (${r.agentId}) with a new agent key.`
        : esc`Joined as ${r.nodeId} (${r.agentId}).`
    consola.success(done)
    printLine(r.replaced ? 'Start the Agent again with (or `systemctl restart muster-agent`):' : 'Start the Agent with:')
    printLine(esc`  ${r.start}`)
  },
})
