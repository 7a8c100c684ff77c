// Every MUSTER_* environment variable muster reads, with its default and its
// meaning: code reads them only through this module (the lint holds that),
// and docs/tunables.md lists them (a test checks that page against this
// table). A number that is not a positive number (or, where zero is allowed,
// not zero or more) counts as unset: the default applies.

interface Tunable {
  /** What it sets, for docs/tunables.md. */
  readonly meaning: string
  /** The value when unset; null: none (the behaviour the meaning describes). */
  readonly default: number | string | null
  /** Who reads it. */
  readonly reader: 'serve' | 'agent' | 'cli' | 'any' | 'bench'
  /** A number: `ms` and `bytes` and `seconds` name the unit. */
  readonly unit?: 'ms' | 'seconds' | 'bytes' | 'level'
  /** Zero is a value of its own (else only positive numbers count). */
  readonly zero?: true
}

const DAY_MS = 86_400_000

export const TUNABLES = {
  // ---- everywhere ---------------------------------------------------------
  MUSTER_DATA_DIR: { reader: 'any', default: '/var/lib/muster', meaning: 'The data directory when --data-dir is not given.' },
  MUSTER_LOG_LEVEL: { reader: 'any', default: 3, unit: 'level', zero: true, meaning: 'How much goes to stderr (consola levels): 0 errors, 1 warnings, 2 logs, 3 information, 4 debug, 5 trace.' },
  MUSTER_DEBUG: { reader: 'cli', default: null, meaning: 'Set: a failing command prints the stack trace after its one-line error.' },
  MUSTER_TEST_RUN: { reader: 'any', default: null, meaning: 'Set by the test harness: the test run\'s marker, passed on to replicas so that what a test leaves running is found and stopped (docs/testing.md); not for operators.' },
  // ---- the Platform (serve) -------------------------------------------------
  MUSTER_DATABASE_URL: { reader: 'serve', default: null, meaning: 'The store, postgres://… (several Platforms may share it); unset: SQLite muster.db in the data directory. serve hands it to its engine this way, never on a command line.' },
  MUSTER_SERVE_ENGINE: { reader: 'serve', default: null, meaning: 'Set by serve for its engine process; not for operators.' },
  MUSTER_PROBE_INTERVAL_MS: { reader: 'serve', default: 15_000, unit: 'ms', meaning: 'How often nodes with an address get a health probe.' },
  MUSTER_CERT_CHECK_MS: { reader: 'serve', default: 2_000, unit: 'ms', meaning: 'How often serve looks for a changed TLS certificate file and CA.' },
  MUSTER_LISTENER_WAIT_MS: { reader: 'serve', default: 30_000, unit: 'ms', meaning: 'How long a connection to the enrollment listener may wait unserved before it is closed.' },
  MUSTER_LOOP_LAG_FILE: { reader: 'serve', default: null, meaning: 'A file the engine writes its event-loop lag to every second (sampled every 10 ms, with what ran during each lag of 20 ms or more), for the benchmarks (docs/benchmarks.md); unset: not sampled.' },
  MUSTER_LEASE_TTL_MS: { reader: 'serve', default: 10_000, unit: 'ms', meaning: 'How long a background loop\'s lease lasts after its last renewal (several Platforms on one store).' },
  MUSTER_SWAP_LINGER_SECONDS: { reader: 'serve', default: 30, unit: 'seconds', zero: true, meaning: 'How long the old engine of an engine swap keeps forwarding the connections it holds.' },
  MUSTER_JOIN_TOKEN: { reader: 'serve', default: null, meaning: 'An office join token: serve joins the controller that minted it (with MUSTER_CONTROLLER_URL and MUSTER_ADVERTISE_URL).' },
  MUSTER_CONTROLLER_URL: { reader: 'serve', default: null, meaning: 'An office\'s controller (the URL its operators reach it by).' },
  MUSTER_ADVERTISE_URL: { reader: 'serve', default: null, meaning: 'Where the controller reaches this office.' },
  MUSTER_OFFICE_ID: { reader: 'serve', default: null, meaning: 'The office id this Platform reports; unset: the one in its join token.' },
  MUSTER_FEDERATION_HEARTBEAT_SECONDS: { reader: 'serve', default: 15, unit: 'seconds', meaning: 'How often an office heartbeats to its controller (0.05 to 3600; anything else refuses to start).' },
  MUSTER_CLOUD_BINARY_URL: { reader: 'serve', default: null, meaning: 'Where created machines download muster (with MUSTER_CLOUD_BINARY_SHA256); unset: the Platform serves its own binary.' },
  MUSTER_CLOUD_BINARY_SHA256: { reader: 'serve', default: null, meaning: 'The SHA-256 of that download (64 hex digits).' },
  MUSTER_CLOUD_BINARY_ARCH: { reader: 'serve', default: null, meaning: 'x86_64 or arm64: the architecture of the binary created machines install (sizes and images follow it); unset: this Platform\'s own.' },
  MUSTER_CLOUD_PLATFORM_ADDRESS: { reader: 'serve', default: null, meaning: 'The Platform\'s address as created machines see it (a probe opens the Agent port to it); unset: the enrollment URL\'s host, resolved.' },
  MUSTER_CLOUD_PROVISION_TIMEOUT_MS: { reader: 'serve', default: 20 * 60_000, unit: 'ms', meaning: 'How long a created machine has to join before its provision fails.' },
  MUSTER_CLOUD_RETRY_MAX_MS: { reader: 'serve', default: 60_000, unit: 'ms', meaning: 'The longest a cloud API call is retried for.' },
  MUSTER_CLOUD_RECONCILE_MS: { reader: 'serve', default: 5_000, unit: 'ms', meaning: 'How often provisions are reconciled with what the provider says.' },
  MUSTER_CLOUD_AUTOSCALE_MS: { reader: 'serve', default: 10_000, unit: 'ms', meaning: 'How often automatic scale-out decides.' },
  MUSTER_CLOUD_HETZNER_URL: { reader: 'serve', default: 'https://api.hetzner.cloud/v1', meaning: 'The Hetzner Cloud API (tests point it at a fake).' },
  MUSTER_CLOUD_DIGITALOCEAN_URL: { reader: 'serve', default: 'https://api.digitalocean.com/v2', meaning: 'The DigitalOcean API.' },
  MUSTER_CLOUD_AWS_URL: { reader: 'serve', default: null, meaning: 'The EC2 API (else AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL, then the region\'s own).' },
  MUSTER_CLOUD_AWS_STS_URL: { reader: 'serve', default: null, meaning: 'The STS API (else AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, then the region\'s own).' },
  MUSTER_CLOUD_AWS_CONTAINER_URL: { reader: 'serve', default: 'http://169.254.170.2', meaning: 'The ECS container credentials service.' },
  MUSTER_CLOUD_AWS_IMDS_URL: { reader: 'serve', default: 'http://169.254.169.254', meaning: 'The EC2 instance metadata service (else AWS_EC2_METADATA_SERVICE_ENDPOINT).' },
  MUSTER_CLOUD_AZURE_URL: { reader: 'serve', default: 'https://management.azure.com', meaning: 'The Azure Resource Manager API.' },
  MUSTER_CLOUD_AZURE_LOGIN_URL: { reader: 'serve', default: 'https://login.microsoftonline.com', meaning: 'The Microsoft identity platform (Azure tokens).' },
  MUSTER_CLOUD_GCP_URL: { reader: 'serve', default: 'https://compute.googleapis.com/compute/v1', meaning: 'The Compute Engine API.' },
  MUSTER_CLOUD_GCP_TOKEN_URL: { reader: 'serve', default: 'https://oauth2.googleapis.com/token', meaning: 'Google\'s OAuth 2.0 token endpoint.' },
  MUSTER_CLOUD_GCP_CERTS_URL: { reader: 'serve', default: 'https://www.googleapis.com/oauth2/v1/certs', meaning: 'Google\'s signing certificates for GCP identity tokens (kept until their Expires).' },
  MUSTER_CLOUD_AZURE_CA_ISSUERS_HOST: { reader: 'serve', default: 'www.microsoft.com', meaning: 'The only host an Azure attested document\'s missing intermediate is fetched from (its CA Issuers URL).' },
  MUSTER_CLOUD_CHALLENGE_TTL_MS: { reader: 'serve', default: 5 * 60_000, unit: 'ms', meaning: 'How long the nonce an Azure machine fetches its attested data with is good for.' },
  MUSTER_ROLLOUT_TICK_MS: { reader: 'serve', default: 1_000, unit: 'ms', meaning: 'How often the Platform holding the rollouts lease looks at the active rollout (a node\'s report wakes it at once too).' },
  // ---- the Agent ------------------------------------------------------------
  MUSTER_AGENT_HOST: { reader: 'agent', default: null, meaning: 'Where the Agent\'s HTTPS port binds; unset: all interfaces (loopback when the node joined with a loopback address).' },
  MUSTER_AGENT_HEARTBEAT_MS: { reader: 'agent', default: 10_000, unit: 'ms', meaning: 'How often the Agent heartbeats.' },
  MUSTER_AGENT_RENEW_MS: { reader: 'agent', default: DAY_MS, unit: 'ms', meaning: 'How often the Agent renews its node credential.' },
  MUSTER_AGENT_TRUST_MS: { reader: 'agent', default: DAY_MS, unit: 'ms', meaning: 'How often the Agent refreshes its trust keys.' },
  MUSTER_AGENT_TICK_MS: { reader: 'agent', default: 30_000, unit: 'ms', meaning: 'How often the Agent checks whether a renewal or a trust refresh is due.' },
  MUSTER_AGENT_LOG_MAX_BYTES: { reader: 'agent', default: 1024 * 1024, unit: 'bytes', meaning: 'The size at which a replica\'s log file is rotated.' },
  MUSTER_AGENT_STOP_GRACE_MS: { reader: 'agent', default: 5_000, unit: 'ms', meaning: 'How long a stopped replica has between SIGTERM and SIGKILL.' },
  MUSTER_UPDATE_STEP_DELAY_MS: { reader: 'agent', default: 0, unit: 'ms', zero: true, meaning: 'How long the Agent waits after writing each step of an update to its journal (tests kill it at each step); 0: no wait.' },
  MUSTER_LAUNCHED: { reader: 'agent', default: null, meaning: 'Set by the Agent on the release binary it execs (docs/upgrading.md); not for operators.' },
  MUSTER_UPDATE_TRIAL: { reader: 'agent', default: null, meaning: 'Set by the Agent on a new binary on trial: the SHA-256 of that release; not for operators.' },
  MUSTER_AGENT_CGROUPS: { reader: 'any', default: null, meaning: '`off`: replicas (an Agent\'s, and the local node\'s under serve) get no cgroups (the cgroup tree is left alone; a stop reaches their process group and their project\'s uid, and --cpu/--memory are not enforced); unset: each replica in its own cgroup where the Agent has a subtree.' },
  MUSTER_TEST_REPLICA_START_PAUSE_MS: { reader: 'any', default: 0, unit: 'ms', zero: true, meaning: 'Test-only: how long the replica runner waits between spawning a replica and recording it, with a `test pause:` line first (tests kill the Agent there); 0: no wait. Never set it on a real node.' },
  // ---- the command line -------------------------------------------------------
  MUSTER_URL: { reader: 'cli', default: null, meaning: 'The Platform URL when --platform-url is not given (then the one `muster login` saved, then http://127.0.0.1:7380).' },
  MUSTER_TOKEN: { reader: 'cli', default: null, meaning: 'The operator API token when --token is not given (then the one `muster login` saved).' },
  MUSTER_PLATFORM_FINGERPRINT: { reader: 'cli', default: null, meaning: 'The Platform CA pin when --platform-fingerprint is not given.' },
  MUSTER_PLATFORM_CA_FILE: { reader: 'cli', default: null, meaning: 'The Platform CA certificate file when --platform-ca-file is not given.' },
  MUSTER_ENROLLMENT_TOKEN: { reader: 'cli', default: null, meaning: 'The join token for `worker join` and `nodes enroll` when no token flag gives it (else stdin or a prompt): it keeps the token off the command line.' },
  // ---- the benchmarks (bench/) ---------------------------------------------
  MUSTER_BENCH_CACHE: { reader: 'bench', default: null, meaning: 'Where the benchmarks keep the node identities they made (slow to make); unset: muster-bench-cache in the temp directory.' },
} as const satisfies Record<`MUSTER_${string}`, Tunable>

export type TunableName = keyof typeof TUNABLES
type Env = Record<string, string | undefined>

/** The variable as set (undefined when unset); the caller trims and checks it. */
export function tunable(name: TunableName, env: Env = process.env): string | undefined {
  return env[name]
}

/** A number: the variable when it is a positive number (or zero, where zero counts), else its default. */
export function tunableNumber(name: { [K in TunableName]: (typeof TUNABLES)[K]['default'] extends number ? K : never }[TunableName], env: Env = process.env): number {
  const t: Tunable = TUNABLES[name]
  const v = Number(env[name])
  const raw = env[name]
  if (raw !== undefined && raw.trim() !== '' && Number.isFinite(v) && (v > 0 || (t.zero && v === 0))) return v
  return t.default as number
}
