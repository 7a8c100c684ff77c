// An access token for Azure Resource Manager from the Microsoft identity
// platform's client-credentials flow
// (https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow):
// with a client secret, or keyless with workload identity, where a token file
// the platform rotates (AZURE_FEDERATED_TOKEN_FILE) is sent as the client
// assertion (client_assertion_type urn:ietf:params:oauth:client-assertion-type:jwt-bearer).
// The token endpoint answering 429 or 5xx is asked again (retry.ts).
import { readFileSync } from 'node:fs'
import { MusterError } from '../../errors.ts'
import { send } from '../http.ts'
import type { AzureCredentials, ProviderContext } from '../provider.ts'

export const ARM_SCOPE = 'https://management.azure.com/.default'

export class AzureToken {
  private token: { value: string; until: number } | null = null

  constructor(
    private readonly creds: AzureCredentials,
    private readonly ctx: Pick<ProviderContext, 'retry'> & { login: string },
  ) {}

  private form(): URLSearchParams {
    const c = this.creds
    const f = new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, scope: ARM_SCOPE })
    if ('clientSecret' in c) f.set('client_secret', c.clientSecret)
    else {
      let assertion: string
      try {
        assertion = readFileSync(c.federatedTokenFile, 'utf8').trim()
      } catch (e) {
        throw new MusterError('cloud-credentials-refused', `azure: cannot read the federated token file ${c.federatedTokenFile}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`)
      }
      if (!assertion) throw new MusterError('cloud-credentials-refused', `azure: the federated token file ${c.federatedTokenFile} is empty.`)
      f.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer')
      f.set('client_assertion', assertion)
    }
    return f
  }

  /** A token, kept until a minute before it expires. */
  async get(): Promise<string> {
    if (this.token && Date.now() < this.token.until) return this.token.value
    const url = `${this.ctx.login}/${encodeURIComponent(this.creds.tenantId)}/oauth2/v2.0/token`
    const a = await send('azure', url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: this.form().toString() }, { idempotent: true, policy: this.ctx.retry, api: 'azure-login' })
    let j: { access_token?: string; expires_in?: number; error?: string; error_description?: string } = {}
    try {
      j = JSON.parse(a.text)
    } catch {}
    if (a.status !== 200 || !j.access_token) {
      const why = [j.error, j.error_description?.split(/\r?\n/)[0]].filter(Boolean).join(': ')
      const code = a.status >= 500 || a.status === 429 ? 'cloud-provider-error' : 'cloud-credentials-refused'
      throw new MusterError(code, `azure ${code === 'cloud-provider-error' ? 'login answered' : 'refused the credentials'} (${a.status}${why ? ` ${why}` : ''}).`, { providerStatus: a.status, providerCode: j.error ?? null, retryable: a.verdict !== null })
    }
    this.token = { value: j.access_token, until: Date.now() + Math.max((j.expires_in ?? 3600) - 60, 30) * 1000 }
    return this.token.value
  }
}
