// Name patterns for fleet tokens: `*` any run of name characters, `?` one.
export const NAME_PATTERN = /^[a-z0-9*?][a-z0-9*?-]{0,62}$/

export function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[a-z0-9-]*').replace(/\?/g, '[a-z0-9-]')}$`)
  return re.test(name)
}
