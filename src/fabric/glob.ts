// Name patterns for fleet tokens: `*` any run of name characters, `?` one.
// Matched by hand in O(pattern × name) steps at worst, never by a backtracking
// RegExp: a pattern like `****************z` must not freeze the event loop.

const isNameChar = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c === '-'

export function globMatch(pattern: string, name: string): boolean {
  // Greedy two-pointer match: on a mismatch, only the last `*` seen takes one
  // more character (earlier stars can never do better), so each name position
  // is retried at most once per pattern position.
  let p = 0
  let n = 0
  let star = -1
  let mark = 0
  while (n < name.length) {
    const c = name[n]!
    const pc = pattern[p]
    if (pc === '*') {
      while (pattern[p] === '*') p++
      star = p
      mark = n
    } else if (pc !== undefined && (pc === '?' ? isNameChar(c) : pc === c)) {
      p++
      n++
    } else if (star >= 0 && isNameChar(name[mark]!)) {
      mark++
      n = mark
      p = star
    } else {
      return false
    }
  }
  while (pattern[p] === '*') p++
  return p === pattern.length
}
