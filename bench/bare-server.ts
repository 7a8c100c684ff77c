// The yardstick: a bare Bun.serve answering a fixed JSON body, run in its own
// process like the Platform, so the ratio between the two is the figure.
const body = process.argv[2] ?? '{"ok":true}'
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  reusePort: false,
  fetch: async (req) => {
    if (req.method === 'POST') await req.arrayBuffer()
    return new Response(body, { headers: { 'content-type': 'application/json' } })
  },
})
process.stdout.write(`listening on http://127.0.0.1:${server.port}\n`)
process.on('SIGTERM', () => {
  server.stop(true)
  process.exit(0)
})
