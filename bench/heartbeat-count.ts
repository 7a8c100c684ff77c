// Sends exactly COUNT heartbeats (the request bench/wrk/heartbeat.lua sends: the Agent's, byte for
// byte) over C keep-alive connections, rotating over the credentials, and waits for every answer
// (bench/heartbeat-callgrind.sh counts the server's instructions over them).
//   bun bench/heartbeat-count.ts URL CREDENTIALS_FILE BODY COUNT [C]
// Exits 1 at the first answer that is not 200.
export {}
const [url, credentialsFile, body, countArg, connectionsArg] = process.argv.slice(2)
const credentials = (await Bun.file(credentialsFile!).text()).split('\n').filter(Boolean)
const target = new URL(url!)
const COUNT = Number(countArg)
const CONNECTIONS = Number(connectionsArg ?? 8)
const request = (credential: string) =>
  `POST /api/v1/nodes/register HTTP/1.1\r\nHost: ${target.host}\r\nAccept: application/json\r\nAuthorization: Bearer ${credential}\r\nContent-Type: application/json\r\nConnection: keep-alive\r\nUser-Agent: Bun/1.4.4\r\nAccept-Encoding: gzip, deflate, br, zstd\r\nContent-Length: ${Buffer.byteLength(body!)}\r\n\r\n${body}`
let sent = 0
let answered = 0
const started = performance.now()
await new Promise<void>((resolve) => {
  for (let c = 0; c < CONNECTIONS; c++) {
    let buf = ''
    const next = (s: Bun.Socket<undefined>) => {
      if (sent < COUNT) s.write(request(credentials[sent++ % credentials.length]!))
    }
    void Bun.connect({
      hostname: target.hostname,
      port: Number(target.port),
      socket: {
        open: next,
        data(s, d) {
          buf += d.toString()
          for (;;) {
            const head = buf.indexOf('\r\n\r\n')
            if (head < 0) return
            const length = Number(/content-length: *(\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0)
            if (buf.length < head + 4 + length) return
            if (!buf.startsWith('HTTP/1.1 200')) {
              process.stderr.write(`heartbeat-count: ${buf.slice(0, 300)}\n`)
              process.exit(1)
            }
            buf = buf.slice(head + 4 + length)
            if (++answered === COUNT) return resolve()
            next(s)
          }
        },
      },
    })
  }
})
process.stdout.write(`heartbeat-count: ${COUNT} answered 200 in ${(performance.now() - started).toFixed(0)} ms\n`)
process.exit(0)
