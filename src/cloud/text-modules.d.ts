// Files bundled as text (`import x from './f.sh' with { type: 'text' }`).
declare module '*.sh' {
  const text: string
  export default text
}
