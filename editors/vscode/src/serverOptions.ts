// How the extension starts `amplint server` and what it tells the language client, from the
// settings and the workspace's interpreter. Pure on purpose (no `vscode` import), so the choice
// of command is unit-tested in node without VS Code.

/** The `amplint.*` settings, as read from the workspace configuration. */
export interface AmplintSettings {
  path: string[];
  interpreter: string[];
  args: string[];
  unsafeFixes: boolean;
}

/** What the extension knows of its surroundings when it starts the server. */
export interface Environment {
  /** The Python extension's interpreter for the workspace (path first), if it has one. */
  pythonExtensionInterpreter?: string[];
  /** The first workspace folder's path, substituted for `${workspaceFolder}`. */
  workspaceFolder?: string;
  /** The user's home directory, substituted for a leading `~`. */
  home?: string;
  /** `process.platform`: picks the fallback interpreter's name. */
  platform: string;
  /** Whether a file exists (for `amplint.path`, tried in order). */
  exists: (path: string) => boolean;
}

/** Where the command came from, said in the output channel so a wrong choice is easy to see. */
export type CommandSource = "amplint.path" | "amplint.interpreter" | "python extension" | "default interpreter";

export interface ServerCommand {
  command: string;
  args: string[];
  source: CommandSource;
}

export const DEFAULT_SETTINGS: AmplintSettings = { path: [], interpreter: [], args: [], unsafeFixes: false };

/** `${workspaceFolder}` and a leading `~` expanded, as VS Code's own path settings allow. */
export function expandPath(value: string, env: Environment): string {
  let out = value;
  if (env.workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(env.workspaceFolder);
  }
  if (env.home !== undefined && (out === "~" || out.startsWith("~/") || out.startsWith("~\\"))) {
    out = env.home + out.slice(1);
  }
  return out;
}

/**
 * The server's command line, first match wins:
 * 1. the first `amplint.path` entry that exists: `<path> server`;
 * 2. `amplint.interpreter`: `<interpreter> -m amplint server`;
 * 3. the Python extension's interpreter for the workspace: `<it> -m amplint server`;
 * 4. `python3` (`python` on Windows) from PATH: `-m amplint server`.
 * `amplint.args` follow `server` in each case. An `amplint.path` whose entries all fail to
 * exist falls through to the interpreters rather than starting a command that cannot run.
 */
export function serverCommand(settings: AmplintSettings, env: Environment): ServerCommand {
  const tail = ["server", ...settings.args];
  const executable = settings.path.map((p) => expandPath(p, env)).find((p) => p.trim() !== "" && env.exists(p));
  if (executable !== undefined) {
    return { command: executable, args: tail, source: "amplint.path" };
  }
  const module = ["-m", "amplint", ...tail];
  const configured = settings.interpreter.filter((part) => part.trim() !== "");
  if (configured.length > 0) {
    const [command, ...rest] = configured.map((p) => expandPath(p, env));
    return { command, args: [...rest, ...module], source: "amplint.interpreter" };
  }
  const fromExtension = (env.pythonExtensionInterpreter ?? []).filter((part) => part.trim() !== "");
  if (fromExtension.length > 0) {
    const [command, ...rest] = fromExtension;
    return { command, args: [...rest, ...module], source: "python extension" };
  }
  return { command: env.platform === "win32" ? "python" : "python3", args: module, source: "default interpreter" };
}

/** The language client's options that do not need VS Code's types. */
export interface ClientOptionsCore {
  documentSelector: { scheme: string; language: string }[];
  initializationOptions: { unsafeFixes: boolean };
}

export function clientOptions(settings: AmplintSettings): ClientOptionsCore {
  return {
    // Saved files and unsaved editors alike: the server lints the text the editor holds.
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
    ],
    // The server reads `unsafeFixes` from the initialization options (docs/integrations.md).
    initializationOptions: { unsafeFixes: settings.unsafeFixes },
  };
}

/** Settings as VS Code returns them, with anything of the wrong type replaced by the default. */
export function normalizeSettings(raw: { [key: string]: unknown }): AmplintSettings {
  const strings = (value: unknown): string[] =>
    Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : typeof value === "string" && value !== "" ? [value] : [];
  return {
    path: strings(raw.path),
    interpreter: strings(raw.interpreter),
    args: strings(raw.args),
    unsafeFixes: raw.unsafeFixes === true,
  };
}
