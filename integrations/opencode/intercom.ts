// intercom-opencode-plugin: written by `intercom install opencode`;
// `intercom uninstall opencode` removes it. Source: integrations/opencode/
// in the intercom repository (see its README.md).
//
// A thin adapter: every OpenCode session gets its own intercom session
// (oc-<session id>), held by a long-lived `intercom opencode` child that
// speaks JSON lines; the intercom tool runs one-shot `intercom --json`
// commands as that session. Everything else is Go, in the intercom binary.
import type { Plugin } from "@opencode-ai/plugin"
import { spawn, execFile, type ChildProcess } from "node:child_process"
import { createInterface } from "node:readline"

// The intercom binary: install writes its absolute path here.
const INTERCOM: string = process.env.INTERCOM_BIN || "__INTERCOM_BIN__"
// How long a hook waits for intercom before letting OpenCode go on.
const HOOK_WAIT_MS = 15_000
const RESTART_MS = 10_000
// The tools a reservation can refuse (the Go side reads their paths).
const EDIT_TOOLS = ["write", "edit", "multiedit", "patch", "apply_patch", "bash"]
// `opencode run` exits at its first idle: a prompt sent then would be
// stored but not answered (until `opencode run -s`), so it never wakes.
const ONE_SHOT = process.argv.slice(2).find((a) => !a.startsWith("-")) === "run"

type HostEvent = { event: string; req?: number; session?: string; name?: string; intro?: string; text?: string; acked?: number; error?: string }

// warn says a problem on stderr, each distinct one once: cause names the
// problem (the message itself unless given), so one cause seen by several
// callers (a missing intercom binary) is one line.
const warned = new Set<string>()
function warn(msg: string, cause: string = msg) {
  if (warned.has(cause) || warned.size > 100) return
  warned.add(cause)
  console.error(`intercom: ${msg}`)
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer from intercom in ${ms} ms`)), ms)
  })
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}

// Link is one OpenCode session's intercom session.
class Link {
  id = ""
  name = ""
  intro = ""
  tool = "" // the tool running now; "" between tools
  busy = false
  dead = false
  diedAt = 0
  waiting = false // a waking message waits that no delivery took yet
  readonly ready: Promise<void>
  private child: ChildProcess
  private nextReq = 1
  private pending = new Map<number, { text: (t: string) => void; done: (e: HostEvent) => void }>()
  private chain: Promise<unknown> = Promise.resolve()

  constructor(readonly sessionID: string, cwd: string, onWaiting: (l: Link) => void) {
    this.child = spawn(INTERCOM, ["opencode", "--opencode-session", sessionID, "--cwd", cwd], { stdio: ["pipe", "pipe", "pipe"] })
    let ready!: () => void
    let failed!: (e: Error) => void
    this.ready = new Promise<void>((res, rej) => ((ready = res), (failed = rej)))
    this.ready.catch(() => {})
    this.child.on("error", (e) => {
      this.dead = true
      this.diedAt = Date.now()
      failed(e)
    })
    this.child.on("exit", (code) => {
      this.dead = true
      this.diedAt = Date.now()
      failed(new Error(`intercom opencode exited (${code})`))
      for (const p of this.pending.values()) p.done({ event: "done", error: "intercom opencode exited" })
      this.pending.clear()
    })
    this.child.stdin?.on("error", () => {})
    createInterface({ input: this.child.stderr! }).on("line", (l) => warn(l))
    createInterface({ input: this.child.stdout! }).on("line", (line) => {
      let ev: HostEvent
      try {
        ev = JSON.parse(line)
      } catch {
        return
      }
      switch (ev.event) {
        case "ready":
          this.id = ev.session ?? ""
          this.name = ev.name ?? ""
          this.intro = ev.intro ?? ""
          ready()
          break
        case "waiting":
          this.waiting = true
          onWaiting(this)
          break
        case "deliver":
          this.pending.get(ev.req ?? 0)?.text(ev.text ?? "")
          break
        case "done": {
          const p = this.pending.get(ev.req ?? 0)
          this.pending.delete(ev.req ?? 0)
          p?.done(ev)
          break
        }
        case "error":
          warn(ev.error ?? "unknown error")
      }
    })
  }

  private send(op: object) {
    if (!this.dead) this.child.stdin?.write(JSON.stringify(op) + "\n")
  }

  state(state: string) {
    this.ready.then(() => this.send({ op: "state", state }), () => {})
  }

  // deliver hands the waiting messages to give (one delivery at a time per
  // session); they are acknowledged only once give resolves, and not at all
  // when it throws. It resolves with how many messages were acknowledged.
  deliver(wakeOnly: boolean, give: (text: string) => Promise<void>): Promise<number> {
    const run = async () => {
      await this.ready
      const req = this.nextReq++
      return new Promise<number>((resolve) => {
        this.pending.set(req, {
          text: (t) =>
            give(t).then(
              () => this.send({ op: "handed", req }),
              (e) => this.send({ op: "failed", req, error: String(e) }),
            ),
          done: (ev) => {
            if (ev.error) warn(ev.error)
            else this.waiting = false // the host says again if more waits
            resolve(ev.acked ?? 0)
          },
        })
        this.send({ op: "deliver", req, wake_only: wakeOnly })
      })
    }
    const p = this.chain.then(run, run)
    this.chain = p.catch(() => {})
    return p
  }

  close() {
    this.dead = true
    this.child.stdin?.end()
  }
}

export const IntercomPlugin: Plugin = async ({ client, directory }) => {
  const links = new Map<string, Link>()
  const parents = new Map<string, string>() // subagent session → its parent

  // wake hands waking messages over as a prompt: it starts a turn in an
  // idle session, and a busy one reads it with its next model request.
  const wake = (l: Link) =>
    l
      .deliver(true, async (text) => {
        const res = await client.session.promptAsync({ path: { id: l.sessionID }, body: { parts: [{ type: "text", text }] } })
        if (res.error) throw new Error(`promptAsync: ${JSON.stringify(res.error)}`)
      })
      .catch((e) => warn(String(e)))

  const link = (sessionID: string | undefined): Link | undefined => {
    if (!sessionID || parents.has(sessionID)) return undefined
    let l = links.get(sessionID)
    // A child that ended is started again, at most every RESTART_MS.
    if (!l || (l.dead && Date.now() - l.diedAt > RESTART_MS)) {
      // A running tool delivers at its end; otherwise the message goes in now.
      l = new Link(sessionID, directory, (w) => {
        if (w.tool === "" && (w.busy || !ONE_SHOT)) wake(w)
      })
      links.set(sessionID, l)
      l.ready.catch((e) => warn(String(e)))
    }
    return l
  }

  // intercomJSON runs one intercom command as the session, returning its output.
  const intercomJSON = (l: Link, args: string[], abort?: AbortSignal) =>
    new Promise<string>((resolve) => {
      execFile(INTERCOM, ["--session", l.id, "--json", ...args], { signal: abort, maxBuffer: 8 << 20 }, (err, stdout, stderr) => {
        resolve(err ? `intercom ${args[0]} failed: ${(stderr || String(err)).trim()}` : stdout.trim())
      })
    })

  // checkTool asks intercom whether the tool call would edit a path another
  // session reserved: the reason it must not run, or "" (also on any
  // problem, which is one stderr line: a check never breaks OpenCode).
  const checkTool = async (l: Link, tool: string, args: unknown): Promise<string> => {
    try {
      await within(l.ready, HOOK_WAIT_MS, "reservations")
      const out = await new Promise<string>((resolve, reject) => {
        const child = execFile(
          INTERCOM,
          ["--session", l.id, "--json", "reservations", "--check-tool", tool],
          { cwd: directory, timeout: HOOK_WAIT_MS, maxBuffer: 1 << 20 },
          (err, stdout, stderr) => (err ? reject(new Error((stderr || String(err)).trim())) : resolve(stdout)),
        )
        child.stdin?.on("error", () => {})
        child.stdin?.end(JSON.stringify(args ?? {}))
      })
      const v = JSON.parse(out)
      return v?.block ? String(v.reason || "reserved by another session") : ""
    } catch (e) {
      const cause = String(e).split("\n")[0]
      warn(`reservations not checked: ${cause}`, cause)
      return ""
    }
  }

  let tools = {}
  try {
    const { tool } = await import("@opencode-ai/plugin")
    const z = tool.schema
    tools = {
      intercom: tool({
        description:
          "Find and message the other agent sessions on this machine (intercom), as this session. " +
          "Actions: list (sessions; scope \"all\" for every project), send (non-blocking; steer by default: reaches the peer at its next tool boundary or wakes it), " +
          "ask (blocks until the peer replies; only when you cannot continue without the answer), reply (answers the pending ask; \"to\" picks one of several), " +
          "pending (unresolved inbound asks). Inbound messages appear in tool results and as new prompts.",
        args: {
          action: z.enum(["list", "send", "ask", "reply", "pending"]),
          to: z.string().optional().describe("target session: name, id or id prefix (send, ask; reply: which ask)"),
          message: z.string().optional().describe("the text (send, ask, reply)"),
          scope: z.enum(["project", "all"]).optional().describe("list: this project (default) or all"),
        },
        async execute(args, ctx) {
          const l = link(ctx.sessionID)
          if (!l) return "intercom: this session has no intercom session (a subagent)"
          await within(l.ready, HOOK_WAIT_MS, "intercom tool")
          const msg = args.message ?? ""
          switch (args.action) {
            case "list":
              return intercomJSON(l, ["list", ...(args.scope === "all" ? ["--scope", "all"] : [])], ctx.abort)
            case "send":
            case "ask":
              if (!args.to || !msg) return `intercom: ${args.action} needs "to" and "message"`
              return intercomJSON(l, [args.action, "--", args.to, msg], ctx.abort)
            case "reply":
              if (!msg) return `intercom: reply needs "message"`
              return intercomJSON(l, ["reply", ...(args.to ? ["--to", args.to] : []), "--", msg], ctx.abort)
            default:
              return intercomJSON(l, ["pending"], ctx.abort)
          }
        },
      }),
    }
  } catch (e) {
    warn(`no intercom tool (@opencode-ai/plugin not installed yet: ${e}); shell commands still work`)
  }

  return {
    tool: tools,
    async event({ event }) {
      switch (event.type) {
        case "session.created":
          if (event.properties.info.parentID) parents.set(event.properties.info.id, event.properties.info.parentID)
          else link(event.properties.info.id)
          break
        case "session.deleted":
          links.get(event.properties.info.id)?.close()
          links.delete(event.properties.info.id)
          break
        case "session.status": {
          const l = link(event.properties.sessionID)
          if (!l) break
          if (event.properties.status.type === "busy") {
            l.busy = true
            if (l.tool === "") l.state("thinking")
            if (l.waiting && l.tool === "") wake(l) // what waited before the turn joins it
          } else if (event.properties.status.type === "idle") {
            l.busy = false
            l.tool = ""
            l.state("idle")
            if (!ONE_SHOT) wake(l) // what waits behind active work goes now
          }
          break
        }
      }
    },
    async "chat.message"(input) {
      link(input.sessionID)?.state("thinking")
    },
    async "experimental.chat.system.transform"(input, output) {
      const l = link(input.sessionID)
      if (!l) return
      try {
        await within(l.ready, HOOK_WAIT_MS, "system prompt")
        if (l.intro) output.system.push(l.intro)
      } catch (e) {
        warn(String(e))
      }
    },
    async "shell.env"(input, output) {
      // A subagent's shell commands act as the session that started it.
      const l = link(parents.get(input.sessionID ?? "") ?? input.sessionID)
      if (!l) return
      try {
        await within(l.ready, HOOK_WAIT_MS, "shell.env")
        output.env.INTERCOM_SESSION = l.id
      } catch (e) {
        warn(String(e))
      }
    },
    async "tool.execute.before"(input, output) {
      const l = link(parents.get(input.sessionID) ?? input.sessionID)
      if (!l) return
      if (EDIT_TOOLS.includes(input.tool)) {
        // Reservations: throwing refuses the call, and the model reads why.
        const reason = await checkTool(l, input.tool, output.args)
        if (reason) throw new Error(reason)
      }
      if (parents.has(input.sessionID)) return
      l.tool = input.tool
      l.state("tool:" + input.tool.replace(/\s+/g, "_"))
    },
    async "tool.execute.after"(input, output) {
      const l = link(input.sessionID)
      if (!l) return
      l.tool = ""
      l.state("thinking")
      let open = true
      try {
        await within(
          l.deliver(false, async (text) => {
            if (!open) throw new Error("the tool result was already returned")
            output.output = (output.output ? output.output + "\n\n" : "") + text
          }),
          HOOK_WAIT_MS,
          "tool.execute.after",
        )
      } catch (e) {
        warn(String(e))
      } finally {
        open = false
      }
    },
    async dispose() {
      for (const l of links.values()) l.close()
      links.clear()
    },
  }
}
