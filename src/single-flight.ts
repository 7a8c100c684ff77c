// One run at a time: while a run is in flight, callers share it; the slot is
// cleared when it settles. The run always starts asynchronously, so a body
// that returns or throws before its first await can never leave a settled
// promise stuck in the slot (which would silently stop every later run).
export class SingleFlight<T> {
  private current: Promise<T> | undefined

  run(fn: () => Promise<T>): Promise<T> {
    if (!this.current) {
      const p: Promise<T> = Promise.resolve()
        .then(fn)
        .finally(() => {
          if (this.current === p) this.current = undefined
        })
      this.current = p
    }
    return this.current
  }

  get busy(): boolean {
    return this.current !== undefined
  }
}
