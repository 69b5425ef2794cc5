// The VS Code side: reads the settings and the Python extension's interpreter, then starts
// `amplint server` over stdio through vscode-languageclient. The choices live in serverOptions.ts.
import * as fs from "fs";
import * as os from "os";
import * as vscode from "vscode";
import { LanguageClient, ServerOptions, TransportKind } from "vscode-languageclient/node";
import { clientOptions, normalizeSettings, serverCommand } from "./serverOptions";

let client: LanguageClient | undefined;
let output: vscode.LogOutputChannel | undefined;

// The part of the Python extension's API used here (ms-python.python, `environments`).
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

async function pythonExtensionInterpreter(folder?: vscode.Uri): Promise<string[] | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const environments = api?.environments;
    if (environments === undefined) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(folder));
    const executable = resolved?.executable.uri?.fsPath;
    return executable ? [executable] : undefined;
  } catch (error) {
    output?.appendLine(`The Python extension gave no interpreter (${String(error)}); using the fallback.`);
    return undefined;
  }
}

async function start(): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  const configuration = vscode.workspace.getConfiguration("amplint", folder);
  const settings = normalizeSettings({
    path: configuration.get("path"),
    interpreter: configuration.get("interpreter"),
    args: configuration.get("args"),
    unsafeFixes: configuration.get("unsafeFixes"),
  });
  const command = serverCommand(settings, {
    pythonExtensionInterpreter: await pythonExtensionInterpreter(folder),
    workspaceFolder: folder?.fsPath,
    home: os.homedir(),
    platform: process.platform,
    exists: (path) => fs.existsSync(path),
  });
  output?.appendLine(`Starting ${[command.command, ...command.args].join(" ")} (from ${command.source})`);
  const serverOptions: ServerOptions = {
    command: command.command,
    args: command.args,
    transport: TransportKind.stdio,
    options: folder ? { cwd: folder.fsPath } : undefined,
  };
  client = new LanguageClient("amplint", "amplint", serverOptions, { ...clientOptions(settings), outputChannel: output });
  try {
    await client.start();
  } catch (error) {
    void vscode.window.showErrorMessage(
      `amplint: could not start "${command.command}" (${String(error)}). Install amplint with its server into that ` +
        `environment (in an amplint checkout: pip install '.[lsp]') or set amplint.interpreter or amplint.path.`,
    );
  }
}

async function restart(): Promise<void> {
  const running = client;
  client = undefined;
  if (running !== undefined) {
    await running.stop().catch(() => undefined);
  }
  await start();
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("amplint", { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("amplint.restart", restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("amplint")) {
        void restart();
      }
    }),
  );
  await start();
  // start() activated the Python extension if it is installed, so its events are there now.
  const python = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  const pythonApi = python?.isActive ? python.exports : undefined;
  const changed = pythonApi?.environments?.onDidChangeActiveEnvironmentPath;
  if (changed !== undefined) {
    // Another interpreter chosen for the workspace: the server must run in that one.
    context.subscriptions.push(changed(() => void restart()));
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
