#!/usr/bin/env bun
// The muster CLI's entry. First of all, secrets given as flags leave the
// process's command line (commands/_argv-first.ts), before the rest of the CLI
// is even loaded: it is a chunk of its own, imported only after that.
import './_argv-first.ts'

await import('./_root.ts')
