// `muster login --sso`: the browser where there is one (a loopback redirect),
// else the device flow (a URL and a code to enter on any device).
import { consola } from 'consola'
import type { StartDeviceSignInAnswer } from '../src/wire/oidc.ts'
import { browserCommand, openBrowser } from './_browser.ts'

type Fetch = (url: string, init: RequestInit) => Promise<Response>

/** Control characters of a value from outside (the provider's URL and code) never reach the terminal raw. */
const safe = (s: string) => s.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`)

export async function ssoLogin(url: string, tokenName: string, opts: { device: boolean; fetch?: Fetch }) {
  const { ssoLoginDevice, ssoLoginLoopback } = await import('../src/client/sso-login.ts')
  if (!opts.device && browserCommand()) {
    return ssoLoginLoopback(url, tokenName, async (authUrl) => {
      if (await openBrowser(authUrl)) consola.info('Opened the browser to sign in; waiting for it to come back…')
      else consola.info(`Open this URL in a browser on this machine to sign in:\n  ${safe(authUrl)}`)
    }, opts.fetch)
  }
  return ssoLoginDevice(url, tokenName, (d: StartDeviceSignInAnswer) => {
    process.stderr.write(`To sign in, open ${safe(d.verificationUri)} on any device and enter the code ${safe(d.userCode)}\n`)
    if (d.verificationUriComplete) process.stderr.write(`(or open ${safe(d.verificationUriComplete)})\n`)
    process.stderr.write(`Waiting for the sign-in (the code is valid for ${Math.round(d.expiresIn / 60)} minutes)…\n`)
  }, opts.fetch)
}
