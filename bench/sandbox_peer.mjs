// The peer's library path for bench/sandbox_peer.py: @anthropic-ai/sandbox-runtime used as
// Claude Code uses it, one Node process that initializes the sandbox once (its network proxies
// and socat bridges) and then wraps each command (`wrapWithSandbox`), spawns the wrapped string
// in a shell, waits for it and calls `cleanupAfterCommand`.
//
//   node bench/sandbox_peer.mjs PACKAGE_DIR SETTINGS_JSON     (cwd: the command's working dir)
//
// Prints {"ready": seconds of initialize}, then answers each line {"mode": "bare"|"boxed",
// "command": "...", "calls": N} on stdin with {"seconds": per call} (or {"error": "..."}).
// "bare" spawns the command itself in the same shell, so what is left over is the sandbox's.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'

const [packageDir, settingsPath] = process.argv.slice(2)
const { SandboxManager } = await import(pathToFileURL(join(packageDir, 'dist', 'index.js')).href)
const SHELL = '/bin/bash'

function run(command) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, { shell: SHELL, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stdout.resume()
    child.stderr.on('data', d => (err += d))
    child.on('error', reject)
    child.on('close', code => (code === 0 ? resolve() : reject(new Error(`exit ${code}: ${err.slice(-500)}`))))
  })
}

async function boxed(command) {
  const wrapped = await SandboxManager.wrapWithSandbox(command, SHELL)
  try {
    await run(wrapped)
  } finally {
    SandboxManager.cleanupAfterCommand()
  }
}

const start = process.hrtime.bigint()
await SandboxManager.initialize(JSON.parse(readFileSync(settingsPath, 'utf8')))
const say = obj => process.stdout.write(JSON.stringify(obj) + '\n')
say({ ready: Number(process.hrtime.bigint() - start) / 1e9 })

for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue
  const { mode, command, calls } = JSON.parse(line)
  try {
    const t = process.hrtime.bigint()
    for (let i = 0; i < calls; i++) await (mode === 'bare' ? run(command) : boxed(command))
    say({ seconds: Number(process.hrtime.bigint() - t) / 1e9 / calls })
  } catch (e) {
    say({ error: String(e && e.message ? e.message : e) })
  }
}
await SandboxManager.reset()
process.exit(0)
