// Opening a URL in the user's browser, where there is one: $BROWSER (a command
// given the URL), else xdg-open under a desktop session, else macOS's open.
// No browser: false, and the caller offers the device flow instead.

function onPath(cmd: string): boolean {
  return Bun.which(cmd) !== null
}

/** The command that would open a URL here, or null. */
export function browserCommand(): string[] | null {
  const env = process.env.BROWSER?.trim()
  if (env) return env.split(/\s+/)
  if (process.platform === 'darwin' && onPath('open')) return ['open']
  if ((process.env.DISPLAY || process.env.WAYLAND_DISPLAY) && onPath('xdg-open')) return ['xdg-open']
  return null
}

export async function openBrowser(url: string): Promise<boolean> {
  const cmd = browserCommand()
  if (!cmd) return false
  // The URL is one argument, never through a shell.
  const p = Bun.spawn([...cmd, url], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' })
  return (await p.exited) === 0
}
