// The parts of oidc-provider's API the test harness uses (the package ships no types).
declare module 'oidc-provider' {
  import type { Server } from 'node:http'
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export type Configuration = Record<string, any>
  export default class Provider {
    constructor(issuer: string, configuration: Configuration)
    on(event: string, listener: (...args: unknown[]) => void): this
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    use(middleware: (ctx: any, next: () => Promise<void>) => Promise<void> | void): void
    listen(port: number, host: string, callback: () => void): Server
    interactionDetails(req: unknown, res: unknown): Promise<{ uid: string; prompt: { name: string } }>
    interactionFinished(req: unknown, res: unknown, result: Record<string, unknown>, options?: { mergeWithLastSubmission?: boolean }): Promise<void>
  }
}
