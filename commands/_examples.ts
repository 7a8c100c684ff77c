// The EXAMPLES section of `--help` for the commands people run first, keyed by
// the command's words. Each example is a comment line and a line to paste.
export const EXAMPLES: Record<string, [string, string][]> = {
  // `muster --help`: where a newcomer starts
  '': [
    ['Everything on this machine in five seconds: a Platform, two workers, a project (Ctrl-C removes it)', 'muster demo'],
    ['A Platform other machines can join (its address 10.0.0.5)', 'muster serve --data-dir ./muster-data --host 10.0.0.5 --enrollment-port 7443'],
    ['Then a machine named worker-1: prints the token and the line to run on it', 'muster nodes enroll-token worker-1'],
  ],
  serve: [
    ['A Platform on this machine only (the API on 127.0.0.1:7380)', 'muster serve --data-dir ./muster-data'],
    ['A Platform other machines can join (HTTPS API and enrollment listener on 10.0.0.5)', 'muster serve --data-dir ./muster-data --host 10.0.0.5 --enrollment-port 7443'],
    ['People sign in with the identity provider; its groups give the role (register <public URL>/auth/oidc/callback there)', "muster serve --data-dir ./muster-data --public-url https://muster.example.com:7380 --oidc-issuer https://login.example.com/realms/acme --oidc-client-id muster --oidc-client-secret-file ./oidc-secret --oidc-role-map 'muster-admins=superadmin,developers=operator'"],
  ],
  'worker join': [
    ['The line `muster nodes enroll-token worker-1` prints on the Platform; the token from a 0600 file (or stdin, or the prompt)', 'muster worker join --platform-url https://10.0.0.5:7443 --node-id worker-1 --platform-fingerprint sha256:… --enrollment-token-file token.txt'],
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
    ['On the Platform host, the first time: its CA file, and the password serve wrote', 'muster login --platform-url https://10.0.0.5:7380 --platform-ca-file ./muster-data/platform/ca.pem --identifier superadmin --password-file ./muster-data/platform/initial-superadmin-password'],
    ['From another machine: the pin serve logged at start (or `muster nodes platform` prints); the password is asked', 'muster login --platform-url https://10.0.0.5:7380 --platform-fingerprint sha256:… --identifier alice'],
    ['With the company identity provider (serve --oidc-issuer …): a browser opens; over SSH, a URL and a code instead', 'muster login --sso --platform-url https://muster.example.com:7380'],
  ],
  'nodes enroll-token': [
    ['One machine named worker-1: the token, then the bootstrap line and the worker join line for it', 'muster nodes enroll-token worker-1'],
  ],
  'nodes rebind': [
    ['Let worker-1 join again (a new machine, or after a revoke): the old credential dies, a token and the lines come out', 'muster nodes rebind worker-1'],
  ],
  'projects logs': [
    ['The last 100 lines of replica 0, then what it writes next (Ctrl-C stops)', 'muster projects logs hello --follow'],
    ['The last 20 lines of replica 1', 'muster projects logs hello --replica 1 --tail 20'],
  ],
  'accounts add': [
    ['A person who runs the fleet (the password is asked twice, not echoed)', 'muster accounts add alice --role operator'],
    ['A read-only account for a month, its password from a file', 'muster accounts add auditor --role viewer --expires 30d --password-file ./pw.txt'],
  ],
  audit: [
    ['What alice did in the last day', 'muster audit --principal alice --since 24h'],
    ['Every node action, as they happen', 'muster audit --action node --follow'],
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
