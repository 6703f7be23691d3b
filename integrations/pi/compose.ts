// The compose overlay of /intercom and the shortcut, in the interactive
// TUI: type the message, Tab toggles Send / Request Reply, Enter sends,
// Esc cancels. Where Pi has no custom overlays (--mode rpc), compose falls
// back to a select of the mode and an input dialog.
import { decodeKittyPrintable, matchesKey } from "@mariozechner/pi-tui";

export type Composed = { text: string; requestReply: boolean } | undefined;

// composeOverlay resolves to the composed message, undefined when
// cancelled, or null when this Pi cannot show a custom overlay.
async function composeOverlay(ctx: any, to: string): Promise<Composed | null> {
  if (typeof ctx.ui?.custom !== "function") return null;
  const result = await ctx.ui.custom(
    (tui: any, _theme: any, _keys: any, done: (r: any) => void) => {
      let text = "";
      let requestReply = false;
      const redraw = () => tui?.requestRender?.();
      return {
        render(width: number): string[] {
          const mode = requestReply ? "Request Reply" : "Send";
          const head = `intercom → ${to}  [${mode}]  Tab: Send / Request Reply · Enter: send · Esc: cancel`;
          const body = `> ${text}`;
          return [head.slice(0, width), body.length > width ? body.slice(body.length - width) : body];
        },
        handleInput(data: string) {
          if (matchesKey(data, "escape")) return done({ cancelled: true });
          if (matchesKey(data, "enter")) return done({ text, requestReply });
          if (matchesKey(data, "tab")) {
            requestReply = !requestReply;
            return redraw();
          }
          if (matchesKey(data, "backspace")) {
            text = text.slice(0, -1);
            return redraw();
          }
          const typed = decodeKittyPrintable(data) ?? (data.startsWith("\x1b") ? undefined : data);
          if (typed) {
            text += typed.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
            redraw();
          }
        },
        invalidate() {},
      };
    },
    { overlay: true },
  );
  if (result === undefined) return null; // no custom overlays here (rpc)
  if (result.cancelled || !String(result.text ?? "").trim()) return undefined;
  return { text: result.text, requestReply: !!result.requestReply };
}

// compose asks for the message to the session named to.
export async function compose(ctx: any, to: string): Promise<Composed> {
  const overlay = await composeOverlay(ctx, to);
  if (overlay !== null) return overlay;
  const mode = await ctx.ui.select(`intercom: to ${to}`, ["Send", "Request Reply"]);
  if (mode === undefined) return undefined;
  const text = await ctx.ui.input(`${mode} to ${to}`, "message");
  if (!text?.trim()) return undefined;
  return { text, requestReply: mode === "Request Reply" };
}
