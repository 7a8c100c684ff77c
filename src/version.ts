// The version of this binary: injected by build.ts, read from package.json when
// running from source.
import pkg from '../package.json'

declare const MUSTER_BUILD_VERSION: string | undefined

export const VERSION: string = typeof MUSTER_BUILD_VERSION === 'string' ? MUSTER_BUILD_VERSION : pkg.version

const SEMVER = /^(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?:[-+][0-9A-Za-z.-]{1,64})?$/

export function isVersion(value: string): boolean {
  return SEMVER.test(value)
}

/** Compares two X.Y.Z versions (pre-release suffixes ignored): -1, 0 or 1. */
export function compareVersions(a: string, b: string): number {
  const pa = SEMVER.exec(a)
  const pb = SEMVER.exec(b)
  if (!pa || !pb) throw new Error(`not a version: ${pa ? b : a}`)
  for (let i = 1; i <= 3; i++) {
    const d = Number(pa[i]) - Number(pb[i])
    if (d !== 0) return d < 0 ? -1 : 1
  }
  return 0
}
