// remove, revoke, rotate, rebind, drain: one verb each on one node.
import { defineCommand } from 'citty'
import { checkName, clientArgs } from '../_args.ts'
import { clean, esc, note, printJsonLine, printLine } from '../_out.ts'

const nameArg = { name: { type: 'positional', required: true, description: 'Node name' } } as const

async function client(args: { 'platform-url'?: string; token?: string; name: string }) {
  checkName(args.name, 'NAME')
  const { clientFrom } = await import('../_client.ts')
  return clientFrom(args)
}
function done(json: boolean | undefined, value: unknown, line: string) {
  if (json) printJsonLine(value)
  else note(line)
}

export const remove = defineCommand({
  meta: { name: 'remove', description: 'Remove a node (refused while projects are placed on it, or while it is healthy without --force); its name is tombstoned' },
  args: { ...nameArg, force: { type: 'boolean', description: 'Remove it even while it is healthy (ready or heartbeating)' }, ...clientArgs },
  async run({ args }) {
    const r = await (await client(args)).nodes.remove(args.name, { force: Boolean(args.force) })
    done(args.json, r, esc`Node ${r.nodeId} removed; its credential no longer works and the name stays reserved.`)
  },
})

export const revoke = defineCommand({
  meta: { name: 'revoke', description: 'Stop a node now, even while it heartbeats' },
  args: { ...nameArg, ...clientArgs },
  async run({ args }) {
    const r = await (await client(args)).nodes.revoke(args.name)
    done(args.json, r, esc`Node ${r.nodeId} revoked.`)
  },
})

export const rotate = defineCommand({
  meta: { name: 'rotate', description: "Issue the node's next credential; the previous works one more hour" },
  args: { ...nameArg, ...clientArgs },
  async run({ args }) {
    const r = await (await client(args)).nodes.rotate(args.name)
    done(args.json, r, esc`Node ${r.nodeId} is now at credential generation ${r.generation}; the previous one works until ${r.previousValidUntil}. The Agent picks up the new one at its next heartbeat.`)
  },
})

export const rebind = defineCommand({
  meta: { name: 'rebind', description: 'Let a name enroll again on a new machine: kills the old credential, issues a new enrollment' },
  args: { ...nameArg, ...clientArgs },
  async run({ args }) {
    const r = await (await client(args)).nodes.rebind(args.name)
    if (args.json) return void printJsonLine(r)
    note(esc`Node ${r.nodeId} can enroll again until ${r.expiresAt}; its old credential no longer works. New enrollment token (shown once):`)
    printLine(clean(r.token))
    const { printJoinLines } = await import('./_join-lines.ts')
    printJoinLines(r, null)
  },
})

export const drain = defineCommand({
  meta: { name: 'drain', description: 'Mark a node unschedulable; its replicas move elsewhere (--undo to reverse)' },
  args: { ...nameArg, undo: { type: 'boolean', description: 'Make the node schedulable again' }, ...clientArgs },
  async run({ args }) {
    const r = await (await client(args)).nodes.drain(args.name, { drained: !args.undo })
    done(args.json, r, r.drained ? esc`Node ${r.nodeId} drained.` : esc`Node ${r.nodeId} is schedulable again.`)
  },
})
