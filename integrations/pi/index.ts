// intercom for Pi: a thin extension that gives the model the intercom tools
// and hands it the messages of its intercom session. Everything intercom
// does happens in the `intercom` binary: one long-lived child
// (`intercom --json attach --control`, JSON lines both ways) holds the
// session and prints arriving messages; one-shot `intercom --json ...`
// commands run the tools. Serves both Pi lines: @earendil-works 1.x and
// @mariozechner 0.73.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Type } from "typebox";
import { compose as composeMessage } from "./compose.ts";

const CUSTOM_TYPE = "intercom";

type Msg = {
  event: string;
  id: string;
  from: { id: string; name: string };
  text: string;
  delivery: string;
  expects_reply: boolean;
  rendered?: string;
  wake_held?: string; // the broker's wake budget: it waits for the next boundary
};

type Config = { confirmSend: boolean; shortcut: string; describe: { intercom: string; contact_supervisor: string } };

// intercomBinary is the binary `intercom install pi` wrote next to this
// file (intercom.json), else INTERCOM_BIN, else `intercom` on PATH.
function intercomBinary(): string {
  if (process.env.INTERCOM_BIN) return process.env.INTERCOM_BIN;
  let dir = "";
  try {
    dir = dirname(fileURLToPath(import.meta.url));
  } catch {
    dir = typeof __dirname === "string" ? __dirname : "";
  }
  try {
    const cmd = JSON.parse(readFileSync(join(dir, "intercom.json"), "utf8")).command;
    if (typeof cmd === "string" && cmd) return cmd;
  } catch {
    // not installed by `intercom install pi`: use PATH
  }
  return "intercom";
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, " ").trim();
}

// run runs a one-shot intercom command with --json; it resolves to the
// parsed output, or rejects with the error envelope's message.
function run(bin: string, args: string[], input?: string, signal?: AbortSignal): Promise<any> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["--json", ...args], { stdio: ["pipe", "pipe", "pipe"], env: process.env, signal });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", (e) => reject(new Error(`intercom: ${e.message}`)));
    child.on("close", (code) => {
      let parsed: any;
      try {
        parsed = JSON.parse(out);
      } catch {
        parsed = undefined;
      }
      if (code === 0 && parsed !== undefined) return resolve(parsed);
      const msg = parsed?.error?.message ?? (oneLine(err) || `intercom ${args[0]} exited ${code}`);
      reject(new Error(msg));
    });
    child.stdin.on("error", () => {}); // a command that does not read stdin closes it
    if (input) child.stdin.end(input);
    else child.stdin.end();
  });
}

// loadConfig reads, once at load, what the extension registers with:
// intercom's config (confirmSend, shortcut) and the tools' descriptions.
function loadConfig(bin: string): Config {
  const cfg: Config = {
    confirmSend: false,
    shortcut: "alt+shift+m",
    describe: { intercom: "Message the other agent sessions on this machine.", contact_supervisor: "Contact the supervisor of this run." },
  };
  const get = (args: string[]) => JSON.parse(execFileSync(bin, ["--json", ...args], { encoding: "utf8", timeout: 10000, stdio: ["ignore", "pipe", "pipe"] }));
  try {
    const c = get(["config"]);
    if (typeof c.confirmSend === "boolean") cfg.confirmSend = c.confirmSend;
    if (typeof c.shortcut === "string" && c.shortcut) cfg.shortcut = c.shortcut;
    cfg.describe = { ...cfg.describe, ...get(["tool", "--describe"]) };
  } catch (e: any) {
    console.error(`intercom: cannot read the configuration (${oneLine(String(e?.message ?? e))}); using defaults`);
  }
  return cfg;
}

// isIdle asks Pi; a context that went stale (the session ended) is not.
function isIdle(ctx: any): boolean {
  try {
    return ctx?.isIdle?.() ?? true;
  } catch {
    return false;
  }
}

const safeID = (s: string) => s.replace(/[^A-Za-z0-9_-]+/g, "-");

const inRun = () =>
  ["INTERCOM_SUPERVISOR", "INTERCOM_RUN_ID", "INTERCOM_CHILD_AGENT", "INTERCOM_CHILD_INDEX"].every((k) => !!process.env[k]);

const PRESENCE_HINT =
  "Another intercom session is working in this repository. Before changing shared state or coordinating overlapping work, load_intercom({}) if needed and check intercom({ action: \"list\" }). No message has been sent.";

const str = (description: string) => Type.Optional(Type.String({ description }));
const enumOf = (values: string[], description: string) =>
  Type.Optional(Type.Union(values.map((v) => Type.Literal(v)), { description }));

const intercomParams = Type.Object({
  action: Type.Union(
    ["list", "send", "ask", "reply", "pending", "status", "subscribe", "unsubscribe", "publish", "topics", "reserve", "release", "reservations"].map((v) => Type.Literal(v)),
    { description: "list, send, ask, reply, pending, status, subscribe, unsubscribe, publish, topics, reserve, release or reservations" },
  ),
  scope: enumOf(["project", "all"], "list/status: project (default) or all"),
  to: str("target session name, id or id prefix; for reply: which ask"),
  message: str("message text (send/ask/reply/publish)"),
  attachments: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.Union([Type.Literal("file"), Type.Literal("snippet"), Type.Literal("context")]),
        name: str("name"),
        language: str("language"),
        path: str("for file: read now when content is empty"),
        content: str("content"),
      }),
    ),
  ),
  replyTo: str("message id for threading or replying to an ask"),
  delivery: enumOf(["steer", "queue", "passive"], "steer (default), queue or passive (send only)"),
  queueMode: enumOf(["stack", "replace"], "stack (default) or replace (needs threadId)"),
  threadId: str("required for queueMode replace"),
  passive: Type.Optional(Type.Boolean({ description: "legacy alias for delivery passive" })),
  topic: str("topic name (subscribe/unsubscribe/publish/topics)"),
  awaitRelease: Type.Optional(Type.Boolean({ description: "subscribe: be woken by an explicit release" })),
  event: enumOf(["update", "blocker", "decision", "release"], "publish: update (default), blocker, decision or release"),
  resource: str("publish: the resource this record is about"),
  ownership: enumOf(["held", "released"], "publish: held or released"),
  paths: Type.Optional(Type.Array(Type.String(), { description: "reserve/release/reservations: files, directories or globs" })),
  shared: Type.Optional(Type.Boolean({ description: "reserve: a shared lease" })),
  ttl: str("reserve: lease TTL, e.g. 30m (the default)"),
  reason: str("reserve: what the lease is for"),
  all: Type.Optional(Type.Boolean({ description: "release: every lease of this session" })),
});

const contactParams = Type.Object({
  reason: Type.Union([Type.Literal("need_decision"), Type.Literal("interview_request"), Type.Literal("progress_update")]),
  message: str("the decision request, optional interview note, or progress update"),
  interview: Type.Optional(Type.Any({ description: "interview_request: {title?, description?, questions:[...]}" })),
});

const text = (t: string, details: any = {}) => ({ content: [{ type: "text", text: t }], details });

// needed are the ExtensionAPI functions this extension cannot work without.
const needed = ["on", "registerTool", "registerCommand", "sendMessage"];

export default function intercom(pi: any) {
  const missing = needed.filter((f) => typeof pi?.[f] !== "function");
  if (missing.length) {
    console.error(`intercom: this Pi's extension API lacks ${missing.join(", ")}; intercom is off (it needs Pi 0.73 or 1.x)`);
    return;
  }
  const bin = intercomBinary();
  const cfg = loadConfig(bin);
  const child = inRun(); // a run started by agent-runs: its session is given

  let session = ""; // the intercom session id
  let holder: ChildProcess | null = null;
  let ready: Promise<void> = Promise.resolve();
  let readyProblem = "";
  let shuttingDown = false;
  let loaded = false; // the intercom tool's schema is shown to the model
  let hinted = false;
  let idle = true;
  let toolDepth = 0;
  let lastAsk = ""; // id of the latest ask handed to the model
  let lastCtx: any = null;
  const waiting: Msg[] = []; // arrived, not handed to Pi yet
  const handed = new Map<string, Msg>(); // handed to Pi, not seen by the model yet
  const received = new Set<string>(); // the model has them (acknowledged)
  const steered = new Set<string>(); // handed as steers, not received yet

  const control = (line: object) => {
    if (holder?.stdin?.writable) holder.stdin.write(JSON.stringify(line) + "\n");
  };
  // Lifecycle reports go through the holder's stdin in the order the
  // events came (Pi does not await agent-event handlers). Inside a run the
  // owner holds the session (no holder): each report is a one-shot
  // `intercom state`, chained in the same order, so that the run's stall
  // watch sees the child's boundaries.
  let reports: Promise<unknown> = Promise.resolve();
  const report = (state: string) => {
    if (holder || !child) return control({ state });
    if (!session || shuttingDown) return;
    reports = reports
      .then(() => run(bin, ["--session", session, "state", state]))
      .catch((e: any) => console.error(`intercom: cannot report ${state}: ${oneLine(String(e?.message ?? e))}`));
  };

  const ack = (ids: string[]) => {
    const fresh = ids.filter((id) => !received.has(id));
    if (!fresh.length) return;
    for (const id of fresh) {
      received.add(id);
      handed.delete(id);
      steered.delete(id);
    }
    control({ ack: fresh });
  };

  // hand gives Pi the waiting messages as one digest, rendered by the
  // binary (`intercom digest`: most urgent first, within config
  // digestBytes); what does not fit waits for the next boundary. Hand-overs
  // run one at a time, in order; the batch is claimed at once, so a
  // repeated push of one of its messages is not handed again.
  let handing: Promise<void> = Promise.resolve();
  const hand = (batch: Msg[], options: { deliverAs: string; triggerTurn?: boolean }) => {
    if (!batch.length) return handing;
    for (const m of batch) handed.set(m.id, m);
    handing = handing.then(() => handDigest(batch, options));
    return handing;
  };
  const handDigest = async (batch: Msg[], options: { deliverAs: string; triggerTurn?: boolean }) => {
    let content = batch.map((m) => (m.rendered ?? m.text).trimEnd()).join("\n\n");
    let ids = batch.map((m) => m.id);
    try {
      const d = await run(bin, ["digest"], JSON.stringify({ messages: batch }));
      if (typeof d?.text === "string" && Array.isArray(d.shown) && d.shown.length) {
        content = d.text;
        ids = d.shown;
      }
    } catch (e: any) {
      console.error(`intercom: no digest (${oneLine(String(e?.message ?? e))}); handing the messages as they came`);
    }
    const shown = new Set(ids);
    const rest = batch.filter((m) => !shown.has(m.id));
    for (const m of rest) handed.delete(m.id);
    waiting.unshift(...rest); // the next boundary
    for (const m of batch) {
      if (!shown.has(m.id)) continue;
      if (options.deliverAs === "steer") steered.add(m.id);
      if (m.expects_reply) lastAsk = m.id;
    }
    pi.sendMessage({ customType: CUSTOM_TYPE, content, display: true, details: { ids } }, options);
  };

  // flushBusy hands everything waiting at a tool boundary (steer).
  const flushBusy = () => hand(waiting.splice(0), { deliverAs: "steer" });

  // flushIdle wakes an idle Pi with what wakes; passive messages alone are
  // shown with the next prompt and never start a turn.
  const flushIdle = () => {
    if (!waiting.length) return;
    const batch = waiting.splice(0);
    const wakes = batch.some((m) => m.delivery !== "passive" && !m.wake_held); // the broker's wake budget
    if (wakes) hand(batch, { deliverAs: "steer", triggerTurn: true });
    else hand(batch, { deliverAs: "nextTurn" });
  };

  const arrive = (m: Msg) => {
    if (received.has(m.id) || handed.has(m.id) || waiting.some((w) => w.id === m.id)) return;
    if (m.delivery !== "passive") loaded = true; // an actionable message needs the tool
    waiting.push(m);
    if (idle && toolDepth === 0) flushIdle();
  };

  const goIdle = () => {
    if (idle) return;
    idle = true;
    report("idle");
    if (waiting.length) flushIdle();
    else if (steered.size && isIdle(lastCtx)) {
      // Pi 0.73: a steer handed just as the run ended stays in Pi's queue;
      // a small message that starts a turn drains it (passive messages
      // handed for the next prompt do not count: they never wake).
      pi.sendMessage({ customType: CUSTOM_TYPE, content: "(intercom: delivering the messages above)", display: false, details: { ids: [] } }, { deliverAs: "steer", triggerTurn: true });
    }
  };

  const start = (ctx: any) => {
    lastCtx = ctx;
    const sm = ctx.sessionManager;
    const piSession = String(sm?.getSessionId?.() ?? "");
    // Messages already in the saved session reached the model: never again.
    for (const e of sm?.getEntries?.() ?? []) {
      if (e?.type === "custom_message" && e.customType === CUSTOM_TYPE) {
        for (const id of e.details?.ids ?? []) received.add(id);
      }
    }
    if (child && process.env.INTERCOM_SESSION) {
      session = process.env.INTERCOM_SESSION; // agent-runs holds it
      return;
    }
    if (!piSession) {
      readyProblem = "intercom: this Pi does not give extensions a session id (sessionManager.getSessionId); intercom is off";
      console.error(readyProblem);
      return;
    }
    session = ("pi-" + safeID(piSession)).slice(0, 80);
    process.env.INTERCOM_SESSION = session; // the model's bash commands act as this session
    const named = String(pi.getSessionName?.() ?? "").trim();
    const name = named || `subagent-chat-${safeID(piSession).slice(0, 8)}`;
    const args = ["--json", "attach", "--control", "--id", session, "--name", name, "--cwd", ctx.cwd ?? process.cwd()];
    const proc = spawn(bin, args, { stdio: ["pipe", "pipe", "pipe"], env: process.env });
    holder = proc;
    proc.stdin.on("error", () => {}); // the holder ended: its close handler says so
    let stderr = "";
    proc.stderr.on("data", (d) => (stderr = (stderr + d).slice(-2000)));
    ready = new Promise<void>((resolve) => {
      const lines = createInterface({ input: proc.stdout });
      lines.on("line", (line) => {
        let ev: any;
        try {
          ev = JSON.parse(line);
        } catch {
          return;
        }
        if (ev.event === "attached") {
          const owed = [...received];
          if (owed.length) control({ ack: owed }); // seen before a crash
          // A recovered reply obligation enables the intercom tool.
          run(bin, ["--session", session, "pending"])
            .then((out) => {
              if ((out.asks ?? []).length) loaded = true;
            })
            .catch(() => {})
            .finally(() => resolve());
          return;
        }
        if (ev.event === "error") return console.error(`intercom: ${ev.error}`);
        if (typeof ev.id === "string" && ev.from) arrive(ev as Msg);
      });
      proc.on("error", (e) => {
        readyProblem = `intercom: cannot start ${bin}: ${e.message}`;
        resolve();
      });
      proc.on("close", (code) => {
        holder = null;
        if (!shuttingDown) {
          readyProblem = `intercom: the session holder ended (exit ${code}): ${oneLine(stderr)}`;
          console.error(readyProblem);
        }
        resolve();
      });
    });
  };

  const stop = async () => {
    shuttingDown = true;
    const proc = holder;
    if (!proc) {
      await reports; // inside a run: its last reports land first
      return;
    }
    report("idle");
    const closed = new Promise<void>((resolve) => proc.once("close", () => resolve()));
    proc.stdin?.end(); // the holder detaches and exits
    const timer = setTimeout(() => proc.kill("SIGTERM"), 3000);
    await closed;
    clearTimeout(timer);
  };

  // fetchRun: inside a run, the run's owner holds the session (no holder
  // here to print arrivals), so each tool boundary fetches what waits for
  // it with `intercom inbox`, acknowledged as it is handed over, as a
  // harness's hook does.
  const fetchRun = async () => {
    if (!child || !session) return;
    try {
      for (const m of (await run(bin, ["--session", session, "inbox"])).messages ?? []) arrive(m as Msg);
    } catch (e: any) {
      console.error(`intercom: cannot fetch this run's messages: ${oneLine(String(e?.message ?? e))}`);
    }
  };

  // callTool runs one intercom tool call through the binary.
  const callTool = async (tool: string, params: any, signal?: AbortSignal) => {
    await ready;
    if (!session) throw new Error(readyProblem || "intercom: no session");
    const out = await run(bin, ["--session", session, "tool", tool], JSON.stringify(params ?? {}), signal);
    return String(out.text ?? "");
  };

  pi.on("session_start", async (_event: any, ctx: any) => start(ctx));
  pi.on("session_shutdown", async () => stop());

  pi.on("agent_start", async (_event: any, ctx: any) => {
    lastCtx = ctx;
    idle = false;
    report("thinking");
  });
  pi.on("tool_execution_start", async (event: any) => {
    report("tool:" + safeID(String(event?.toolName ?? "unknown")));
  });
  pi.on("tool_execution_end", async () => {
    if (!idle) report("thinking");
  });
  pi.on("tool_call", async () => {
    toolDepth++;
  });
  // Reservations (docs/reservations.md): an edit of a path another session
  // holds is blocked, with who holds it and how to ask; any problem lets
  // the call run (one line on stderr).
  pi.on("tool_call", async (event: any) => {
    const tool = String(event?.toolName ?? "");
    if (!["edit", "write", "bash"].includes(tool)) return undefined;
    try {
      await ready;
      if (!session) return undefined;
      const out = await run(bin, ["--session", session, "reservations", "--check-tool", tool], JSON.stringify(event?.input ?? {}));
      if (out?.block) return { block: true, reason: String(out.reason ?? "reserved by another session") };
    } catch (e: any) {
      console.error(`intercom: reservations not checked: ${oneLine(String(e?.message ?? e))}`);
    }
    return undefined;
  });
  // A new turn has no tool running (a call another extension blocked never
  // returned a result).
  pi.on("turn_start", async () => {
    toolDepth = 0;
  });
  // The tool boundary: what arrived while the tools ran reaches the model
  // together, before its next request.
  pi.on("tool_result", async () => {
    toolDepth = Math.max(0, toolDepth - 1);
    if (toolDepth > 0) return;
    await fetchRun();
    if (toolDepth === 0) await flushBusy();
  });
  // The receipt: the message is in the model's context now.
  pi.on("message_end", async (event: any) => {
    const m = event?.message;
    if (m?.role === "custom" && m.customType === CUSTOM_TYPE) ack(m.details?.ids ?? []);
  });
  pi.on("agent_end", async (_event: any, ctx: any) => {
    lastCtx = ctx;
    // Pi 1.x may continue after agent_end (agent_settled is final); 0.73 has
    // only agent_end.
    setTimeout(() => {
      if (!shuttingDown && isIdle(ctx)) goIdle();
    }, 50);
  });
  pi.on("agent_settled", async () => goIdle());

  // The intercom tool's schema stays out of the model's requests until
  // load_intercom (both Pi lines apply this at once; setActiveTools does
  // not on 0.73).
  pi.on("before_provider_request", (event: any) => {
    const payload = event?.payload;
    if (loaded || !payload || !Array.isArray(payload.tools)) return undefined;
    payload.tools = payload.tools.filter((t: any) => (t?.name ?? t?.function?.name) !== "intercom");
    return payload;
  });

  // The presence hint: once, when another session works in this project.
  pi.on("before_agent_start", async (event: any) => {
    if (hinted || child || !session) return undefined;
    hinted = true;
    try {
      await ready;
      const out = await run(bin, ["--session", session, "list"]);
      const others = (out.sessions ?? []).filter((s: any) => s.id !== session && s.connected !== false);
      if (!others.length) return undefined;
      return { systemPrompt: `${event.systemPrompt}\n\n${PRESENCE_HINT}` };
    } catch {
      return undefined;
    }
  });

  pi.registerTool({
    name: "load_intercom",
    label: "Load intercom",
    description: "Enable the intercom tool (messaging the other agent sessions on this machine). Sends nothing and checks nothing.",
    parameters: Type.Object({}),
    async execute() {
      loaded = true;
      return text('The intercom tool is enabled. Use intercom({ action: "list" }) to see the other sessions, then send, ask, reply, pending, status or the topic actions.');
    },
  });

  pi.registerTool({
    name: "intercom",
    label: "intercom",
    description: cfg.describe.intercom,
    parameters: intercomParams,
    async execute(_id: string, params: any, signal: AbortSignal, _onUpdate: any, ctx: any) {
      const args = { ...params };
      if (args.action === "send" && cfg.confirmSend && !args.replyTo && ctx?.hasUI) {
        const ok = await ctx.ui.confirm("Send intercom message?", `To ${args.to}: ${args.message ?? ""}`);
        if (!ok) return text("Not sent: the user declined.");
      }
      if (args.action === "reply" && !args.to && !args.replyTo && lastAsk) {
        try {
          return text(await callTool("intercom", { ...args, to: lastAsk }, signal)); // the current ask
        } catch {
          // answered already: the single pending ask, as the guide says
        }
      }
      return text(await callTool("intercom", args, signal));
    },
  });

  if (child) {
    pi.registerTool({
      name: "contact_supervisor",
      label: "Contact supervisor",
      description: cfg.describe.contact_supervisor,
      parameters: contactParams,
      async execute(_id: string, params: any, signal: AbortSignal) {
        return text(await callTool("contact_supervisor", params, signal));
      },
    });
  }

  const openCompose = async (ctx: any, scope: string) => {
    if (!ctx?.hasUI) return;
    await ready;
    let rows: any[] = [];
    try {
      rows = ((await run(bin, ["--session", session, "list", "--scope", scope])).sessions ?? []).filter((s: any) => s.id !== session);
    } catch (e: any) {
      return ctx.ui.notify(`intercom: ${e.message}`, "error");
    }
    if (!rows.length) return ctx.ui.notify(scope === "all" ? "intercom: no other sessions" : "intercom: no other sessions in this project (/intercom all for every project)", "info");
    const labels = rows.map((s: any) => `${s.name} (${String(s.id).slice(0, 8)}) — ${s.status ?? ""} ${s.cwd ?? ""}`.trim());
    const picked = await ctx.ui.select("intercom: message which session?", labels);
    if (picked === undefined) return;
    const target = rows[labels.indexOf(picked)];
    const message = await composeMessage(ctx, target.name);
    if (!message) return;
    try {
      const flags = message.requestReply ? ["--request-reply"] : [];
      const out = await run(bin, ["--session", session, "send", "--yes", ...flags, "--", target.id, message.text]);
      ctx.ui.notify(`intercom: sent to ${target.name} (${out.id ?? ""})`, "info");
    } catch (e: any) {
      ctx.ui.notify(`intercom: ${e.message}`, "error");
    }
  };

  pi.registerCommand("intercom", {
    description: "Message another agent session (/intercom all: every project; /intercom topics: topic state)",
    handler: async (args: string, ctx: any) => {
      const sub = String(args ?? "").trim();
      if (sub === "topics") {
        try {
          ctx.ui.notify(await callTool("intercom", { action: "topics" }), "info");
        } catch (e: any) {
          ctx.ui.notify(`intercom: ${e.message}`, "error");
        }
        return;
      }
      await openCompose(ctx, sub === "all" ? "all" : "project");
    },
  });

  if (typeof pi.registerShortcut === "function") {
    pi.registerShortcut(cfg.shortcut, { description: "intercom: message another session", handler: (ctx: any) => openCompose(ctx, "project") });
  }
}
