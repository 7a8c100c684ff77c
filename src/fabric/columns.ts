// One column of the registry (src/fabric/node-table.ts, src/fabric/node-names.ts) made longer: a new typed
// array of `length` cells holding the old one's, the rest set to `fill`.
type Column = Uint8Array | Int32Array | Float64Array

export function widened<T extends Column>(a: T, length: number, fill = 0): T {
  const b = new (a.constructor as new (n: number) => T)(length)
  if (fill !== 0) b.fill(fill)
  b.set(a)
  return b
}
