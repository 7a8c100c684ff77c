// The EXAMPLES section of `--help` for the commands people run first, keyed by
// the command's words. Each example is a comment line and a line to paste.
export const EXAMPLES: Record<string, [string, string][]> = {
  serve: [
    ['A Platform on this machine only (the API on 127.0.0.1:7380)', 'muster serve --data-dir ./muster-data'],
    ['A Platform other machines can join (HTTPS API and enrollment listener on 10.0.0.5)', 'muster serve --data-dir ./muster-data --host 10.0.0.5 --enrollment-port 7443'],
  ],
  'worker join': [
    ['Join with the token on stdin, pinned to the Platform CA (`muster nodes platform` prints URL and pin)', 'muster worker join --platform-url https://10.0.0.5:7443 --node-id worker-1 --platform-fingerprint sha256:… --enrollment-token-file token.txt'],
    ['A Platform whose API has its own certificate from a private CA: the pin for the listener, the CA file for the API', 'muster worker join --platform-url https://10.0.0.5:7443 --node-id worker-1 --platform-fingerprint sha256:… --platform-ca-file company-ca.pem'],
  ],
  agent: [
    ['Run the Agent of a joined machine (exit status 3: its credential was refused for good; join again)', 'muster agent --data-dir /var/lib/muster'],
  ],
  'nodes join-token create': [
    ['A token ten machines named rack1-* may join with, for a day', 'muster nodes join-token create --max-uses 10 --name-pattern "rack1-*" --ttl-minutes 1440'],
  ],
  'nodes list': [
    ['Every node as JSON, for a script', 'muster nodes list --all --json'],
    ['Only the nodes that do not answer', 'muster nodes list --state unreachable'],
  ],
  'projects deploy': [
    ['Three copies of a command, each with 200 millicores and 128 MB', 'muster projects deploy web --replicas 3 --cpu 200 --memory 128 -- python3 -m http.server 8080'],
  ],
  login: [
    ['Log in to a Platform with its own CA (the pin from `muster nodes platform`)', 'muster login --platform-url https://10.0.0.5:7380 --identifier admin --platform-fingerprint sha256:…'],
  ],
  doctor: [
    ['Check this machine (exit status 1 when a check fails, such as a revoked node)', 'muster doctor --data-dir /var/lib/muster'],
  ],
  demo: [
    ['A Platform and two nodes in a throwaway directory; Ctrl-C removes it all', 'muster demo'],
    ['Every step once, then stop (0 only if all worked)', 'muster demo --once'],
  ],
}

/** The EXAMPLES section for `words` (empty when it has none). */
export function examplesFor(words: string[]): string {
  const list = EXAMPLES[words.join(' ')]
  if (!list) return ''
  return `\nEXAMPLES\n\n${list.map(([what, line]) => `  # ${what}\n  ${line}`).join('\n\n')}\n`
}
