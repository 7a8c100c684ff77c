import type { Migration } from './migration.ts'

export const AUTH_MIGRATIONS: Migration[] = [
  {
    id: 1,
    name: 'accounts, sessions, api tokens',
    sql: `
      CREATE TABLE accounts (
        name TEXT PRIMARY KEY,
        role TEXT NOT NULL,
        password_hash TEXT,
        disabled INTEGER NOT NULL DEFAULT 0,
        origin TEXT NOT NULL DEFAULT 'local',
        created_at INTEGER NOT NULL
      );
      CREATE TABLE sessions (
        id_hash TEXT PRIMARY KEY,
        account TEXT NOT NULL REFERENCES accounts(name) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE api_tokens (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        secret_hash TEXT NOT NULL,
        role TEXT NOT NULL,
        account TEXT,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER,
        revoked_at INTEGER
      );
    `,
  },
  {
    id: 10,
    name: 'api token expiry and origin (login tokens end with the account password); session origin and role cap (vouched sessions)',
    sql: `
      ALTER TABLE api_tokens ADD COLUMN expires_at INTEGER;
      ALTER TABLE api_tokens ADD COLUMN origin TEXT NOT NULL DEFAULT 'host';
      CREATE INDEX api_tokens_account ON api_tokens (account);
      ALTER TABLE sessions ADD COLUMN origin TEXT NOT NULL DEFAULT 'password';
      ALTER TABLE sessions ADD COLUMN role_cap TEXT;
      CREATE INDEX sessions_account ON sessions (account);
    `,
  },
  {
    id: 20,
    name: 'token digests keyed under master.key: the one-time re-key of older rows is recorded here (src/store/token-digests.ts)',
    sql: `
      CREATE TABLE token_digest_state (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        keyed_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Teams: accounts for people may expire; a token
    // minted by a token names its parent (revoking one revokes its
    // descendants); a session opened while a break-glass held a joined
    // office's door open names that membership (it ends when the door closes).
    id: 30,
    name: 'account expiry, api token lineage, break-glass sessions',
    sql: `
      ALTER TABLE accounts ADD COLUMN expires_at INTEGER;
      ALTER TABLE api_tokens ADD COLUMN parent_id TEXT;
      CREATE INDEX api_tokens_parent ON api_tokens (parent_id);
      ALTER TABLE sessions ADD COLUMN membership TEXT;
    `,
  },
  {
    // One audit of every action: two budgets, so no volume of
    // refusals (failed logins, unauthenticated writes) pushes an action out.
    id: 31,
    name: 'audit log of every authenticated write',
    sql: `
      CREATE TABLE audit_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        budget TEXT NOT NULL,
        principal TEXT NOT NULL,
        principal_kind TEXT NOT NULL,
        token_id TEXT,
        source TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT,
        outcome TEXT NOT NULL,
        detail TEXT
      );
      CREATE INDEX audit_log_budget_id ON audit_log (budget, id);
      CREATE INDEX audit_log_budget_at ON audit_log (budget, at);
    `,
  },
  {
    // Each principal's share of an audit budget: the writer's own oldest entries are found through this index.
    id: 35,
    name: 'audit log by principal',
    sql: `
      CREATE INDEX audit_log_budget_principal_id ON audit_log (budget, principal, id);
    `,
  },
  {
    // Sign-in with an OpenID provider (docs/accounts-audit.md): which provider
    // subject an sso account belongs to; the flows in progress (state, nonce and
    // PKCE verifier toward the provider; for the CLI its loopback redirect and
    // its own PKCE challenge; for the device grant the provider's device code);
    // and the break-glass acts that open password login under --oidc-only.
    id: 40,
    name: 'sso identities, sign-in flows, password break-glass under --oidc-only',
    sql: `
      CREATE TABLE sso_identities (
        account TEXT PRIMARY KEY REFERENCES accounts(name) ON DELETE CASCADE,
        issuer TEXT NOT NULL,
        subject TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (issuer, subject)
      );
      CREATE TABLE sso_flows (
        id_hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        nonce TEXT,
        verifier TEXT,
        binding TEXT,
        cli_redirect TEXT,
        cli_state TEXT,
        cli_challenge TEXT,
        device_code TEXT,
        grant_hash TEXT,
        account TEXT,
        session_expires_at INTEGER,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE INDEX sso_flows_grant ON sso_flows (grant_hash);
      CREATE TABLE password_break_glass (
        id TEXT PRIMARY KEY,
        account TEXT,
        at INTEGER NOT NULL
      );
    `,
  },
  {
    // A token minted by a token names the root of its lineage (the token a host or a login made): tokens of no
    // account act as that root in the audit, so minting children buys no one more shares of it (docs/accounts-audit.md).
    // Tokens minted before this keep their lineage: each child gets the root its chain of parents leads to.
    id: 45,
    name: 'api token lineage root',
    sql: `
      ALTER TABLE api_tokens ADD COLUMN root_id TEXT;
      WITH RECURSIVE lineage (id, root) AS (
        SELECT id, id FROM api_tokens WHERE parent_id IS NULL
        UNION SELECT t.id, l.root FROM api_tokens t JOIN lineage l ON t.parent_id = l.id
      )
      UPDATE api_tokens SET root_id = (SELECT root FROM lineage WHERE lineage.id = api_tokens.id) WHERE parent_id IS NOT NULL;
    `,
  },
]
