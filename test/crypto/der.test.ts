import { expect, test } from 'bun:test'
