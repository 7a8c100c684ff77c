// The page behind a vouch link (docs/federation.md, "Open office"). Opening
// the link spends nothing: the page says whom the vouch signs in, as what, on
// which office, and its button POSTs the vouch from this office's own origin.
// A page elsewhere can navigate a browser to the link, but cannot press the
// button (no framing) nor post the vouch itself (a cross-site redemption is
// refused), so it cannot sign a victim's browser in as the attacker.
import { MusterError } from '../errors.ts'
import { readMembership } from './membership.ts'
import { checkVouch } from './vouch.ts'
import type { DataDir } from '../datadir.ts'

/** The page's own policy: no script at all, styles and the form only from this origin, never framed. */
const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // same-origin, not no-referrer: with no-referrer a browser posts the form with `Origin: null`, which the POST refuses.
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin',
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const html = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!)

function page(title: string, body: string, status = 200): Response {
  return new Response(
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${html(title)}</title><link rel="stylesheet" href="/ui/app.css"></head>` +
      `<body><main class="vouch-page"><h1>${html(title)}</h1>${body}</main></body></html>\n`,
    { status, headers: PAGE_HEADERS },
  )
}

/**
 * GET /office/vouch?v=…: checks the vouch offline (shape, office, signature, expiry) and shows what it would
 * do, with a button that POSTs it. Nothing is spent, created or set: a HEAD or a prefetch of the link is harmless.
 */
export function vouchPage(dataDir: DataDir, text: string, now: number): Response {
  try {
    const v = checkVouch(text, readMembership(dataDir), now)
    const role = v.role ?? 'viewer'
    return page(
      `Open office ${v.officeId}`,
      `<p>The controller vouches for <strong>${html(v.identity)}</strong> as <strong>${html(role)}</strong> (at most) on office <strong>${html(v.officeId)}</strong>, until ${html(new Date(v.expiresAt * 1000).toISOString())}.</p>` +
        `<p>Continue only if you asked for this link yourself: the session it opens is ${html(v.identity)}'s, and everything you do in it is recorded as theirs.</p>` +
        `<form method="post" action="/office/vouch"><input type="hidden" name="v" value="${html(text)}"><button class="primary" type="submit">Sign in as ${html(v.identity)}</button></form>`,
    )
  } catch (e) {
    if (!(e instanceof MusterError)) throw e
    return page('This vouch cannot be used', `<p>${html(e.message)}</p>`, e.status)
  }
}
