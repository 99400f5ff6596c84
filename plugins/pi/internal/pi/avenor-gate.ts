/**
 * avenor permission gate for pi (shipped inside avenor-plugin-pi).
 *
 * pi runs tools without asking. This extension asks before every shell
 * command and every file write: it opens a select dialog, which pi's RPC
 * mode sends to avenor as an extension_ui_request; avenor turns it into a
 * permission request and answers with "Allow" or "Deny" (or cancels it).
 * The title's first line is "avenor-gate: <tool>", which the plugin
 * recognises. Without a UI (never the case under avenor) it blocks.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";

const gated = new Set(["bash", "write", "edit"]);

function summary(toolName: string, input: Record<string, unknown>): string {
	if (toolName === "bash") return String(input.command ?? "");
	return String(input.path ?? input.file_path ?? "");
}

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async (event, ctx) => {
		if (!gated.has(event.toolName)) return undefined;
		const input = (event.input ?? {}) as Record<string, unknown>;
		if (!ctx.hasUI) {
			return { block: true, reason: "Blocked by avenor-gate: no UI to ask for permission" };
		}
		const title = `avenor-gate: ${event.toolName}\n\n  ${summary(event.toolName, input)}`;
		const choice = await ctx.ui.select(title, ["Allow", "Deny"]);
		if (choice === "Allow") return undefined;
		if (choice === undefined) return { block: true, reason: "Cancelled by user" };
		return { block: true, reason: "Denied by user" };
	});
}
