// Compiles the CLI into one executable, dist/muster, with the version from
// package.json baked in. bunfig/.env autoload is off so an operator's working
// directory cannot change how the binary behaves.
import pkg from './package.json'

const result = Bun.spawnSync([
  'bun', 'build', './commands/index.ts',
  '--compile', '--minify', '--sourcemap=none',
  '--splitting', '--bytecode', '--format=esm',
  '--no-compile-autoload-dotenv', '--no-compile-autoload-bunfig',
  `--define`, `MUSTER_BUILD_VERSION=${JSON.stringify(pkg.version)}`,
  '--outfile', 'dist/muster',
], { stdout: 'inherit', stderr: 'inherit' })
if (result.exitCode !== 0) process.exit(result.exitCode ?? 1)
console.log(`built dist/muster ${pkg.version}`)
