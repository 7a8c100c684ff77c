// A small XML reader for the EC2 Query API's answers: elements, text and the
// five predefined entities. No DTDs, no namespaces beyond ignoring them.
export interface XmlNode {
  name: string
  children: XmlNode[]
  text: string
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }
const decode = (s: string) => s.replace(/&(amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/g, (_, e: string) => (e[0] === '#' ? String.fromCodePoint(e[1] === 'x' ? Number.parseInt(e.slice(2), 16) : Number(e.slice(1))) : ENTITIES[e]!))

export function parseXml(text: string): XmlNode {
  const root: XmlNode = { name: '#document', children: [], text: '' }
  const stack = [root]
  const re = /<(\/?)([A-Za-z_][\w.:-]*)([^>]*?)(\/?)>|<\?[^>]*\?>|<!--[\s\S]*?-->|([^<]+)/g
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const top = stack[stack.length - 1]!
    if (m[5] !== undefined) top.text += decode(m[5])
    else if (!m[2]) continue
    else if (m[1]) {
      if (top.name !== m[2] || stack.length === 1) throw new Error(`XML: unexpected </${m[2]}>`)
      stack.pop()
    } else {
      const node: XmlNode = { name: m[2], children: [], text: '' }
      top.children.push(node)
      if (!m[4]) stack.push(node)
    }
  }
  if (stack.length !== 1) throw new Error('XML: unclosed element')
  return root
}

/** The first descendant along a path of element names. */
export function child(node: XmlNode | undefined, ...path: string[]): XmlNode | undefined {
  let n = node
  for (const name of path) n = n?.children.find((c) => c.name === name)
  return n
}

export function textOf(node: XmlNode | undefined, ...path: string[]): string | undefined {
  const n = child(node, ...path)
  return n ? n.text.trim() : undefined
}

/** The <item> children of the element at `path`. */
export function items(node: XmlNode | undefined, ...path: string[]): XmlNode[] {
  return child(node, ...path)?.children.filter((c) => c.name === 'item') ?? []
}
