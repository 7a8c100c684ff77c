// Dashboard assets are imported as text (`with { type: 'text' }`) so that
// `bun build --compile` embeds them; these names are typed as strings here and
// nowhere else, so a mistyped .js import elsewhere still fails the type check.
declare module '*/ui/index.html' {
  const text: string
  export default text
}
declare module '*/ui/app.css' {
  const text: string
  export default text
}
declare module '*/ui/app.js' {
  const text: string
  export default text
}
declare module '*/ui/lib.js' {
  const text: string
  export default text
}
declare module '*/ui/add-machine.js' {
  const text: string
  export default text
}
declare module '*/ui/nodes.js' {
  const text: string
  export default text
}
declare module '*/ui/projects.js' {
  const text: string
  export default text
}
declare module '*/ui/offices.js' {
  const text: string
  export default text
}
declare module '*/ui/cloud.js' {
  const text: string
  export default text
}
declare module '*/ui/cloud-connect.js' {
  const text: string
  export default text
}
declare module '*/ui/cloud-wizard.js' {
  const text: string
  export default text
}
declare module '*/ui/cloud-scaling.js' {
  const text: string
  export default text
}
declare module '*/ui/accounts.js' {
  const text: string
  export default text
}
declare module '*/ui/audit.js' {
  const text: string
  export default text
}
declare module '*/ui/overview.js' {
  const text: string
  export default text
}
declare module '*/ui/project-page.js' {
  const text: string
  export default text
}
declare module '*/ui/project-form.js' {
  const text: string
  export default text
}
declare module '*/ui/releases.js' {
  const text: string
  export default text
}
