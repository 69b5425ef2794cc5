// The real `amplint server`, started with the command serverOptions.ts builds and initialized with
// the options it builds, spoken to over stdio through the JSON-RPC protocol layer
// vscode-languageclient/node itself runs on.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import {
  CodeAction,
  CodeActionRequest,
  Diagnostic,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializeRequest,
  InitializeResult,
  InitializedNotification,
  ProtocolConnection,
  PublishDiagnosticsNotification,
  PublishDiagnosticsParams,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { AmplintSettings, DEFAULT_SETTINGS, clientOptions, serverCommand } from "../serverOptions";

// The interpreter that has amplint and pygls: AMPLINT_PYTHON (.ci/run and the pytest driver set
// it), else the default the extension itself falls back to.
const python = process.env.AMPLINT_PYTHON;
const REPO = path.resolve(__dirname, "..", "..", "..", "..");
const DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n";
// `model.cuda().half()` under autocast: AMP005, whose fix is unsafe.
const HALF = fs.readFileSync(path.join(REPO, "fixtures", "AMP005", "bad_autocast_only.py"), "utf-8");

interface Session {
  connection: ProtocolConnection;
  initialized: InitializeResult;
  open(name: string, text: string): Promise<{ uri: string; diagnostics: Diagnostic[] }>;
}

async function withServer(overrides: Partial<AmplintSettings>, body: (session: Session) => Promise<void>): Promise<void> {
  const settings: AmplintSettings = { ...DEFAULT_SETTINGS, interpreter: python ? [python] : [], ...overrides };
  const command = serverCommand(settings, { platform: process.platform, exists: fs.existsSync });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "amplint-vscode-"));
  const server = spawn(command.command, command.args, { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (chunk) => (stderr += chunk));
  const connection = createProtocolConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  const waiting = new Map<string, (params: PublishDiagnosticsParams) => void>();
  connection.onNotification(PublishDiagnosticsNotification.type, (params) => waiting.get(params.uri)?.(params));
  connection.listen();
  try {
    const initialized = await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(root).toString(),
      capabilities: {},
      initializationOptions: clientOptions(settings).initializationOptions,
      workspaceFolders: null,
    });
    await connection.sendNotification(InitializedNotification.type, {});
    const open = async (name: string, text: string) => {
      const uri = pathToFileURL(path.join(root, name)).toString();
      const published = new Promise<PublishDiagnosticsParams>((resolve) => waiting.set(uri, resolve));
      await connection.sendNotification(DidOpenTextDocumentNotification.type, {
        textDocument: { uri, languageId: "python", version: 1, text },
      });
      return { uri, diagnostics: (await published).diagnostics };
    };
    await body({ connection, initialized, open });
    await connection.sendRequest(ShutdownRequest.type);
    await connection.sendNotification(ExitNotification.type);
  } catch (error) {
    throw new Error(`${String(error)}\nserver stderr:\n${stderr}`);
  } finally {
    connection.dispose();
    server.kill();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function quickFixTitles(session: Session, name: string, text: string, code: string): Promise<string[]> {
  const { uri, diagnostics } = await session.open(name, text);
  const ours = diagnostics.filter((d) => d.code === code);
  assert.ok(ours.length > 0, JSON.stringify(diagnostics));
  const actions = await session.connection.sendRequest(CodeActionRequest.type, {
    textDocument: { uri },
    range: ours[0].range,
    context: { diagnostics: ours, only: ["quickfix"] },
  });
  return (actions ?? []).filter((a): a is CodeAction => "kind" in a && (a.diagnostics ?? []).length > 0).map((a) => a.title);
}

test("amplint server publishes AMP001 for a file opened through the protocol connection", { timeout: 60_000 }, async () => {
  await withServer({}, async (session) => {
    assert.equal(session.initialized.serverInfo?.name, "amplint");
    const { diagnostics } = await session.open("train.py", DEPRECATED);
    assert.equal(diagnostics.length, 1, JSON.stringify(diagnostics));
    const [diagnostic] = diagnostics;
    assert.equal(diagnostic.code, "AMP001");
    assert.equal(diagnostic.source, "amplint");
    assert.deepEqual(diagnostic.range, { start: { line: 2, character: 5 }, end: { line: 2, character: 28 } });
  });
});

test("amplint.unsafeFixes reaches the server: unsafe quick fixes only when it is on", { timeout: 60_000 }, async () => {
  await withServer({}, async (session) => {
    assert.deepEqual(await quickFixTitles(session, "half.py", HALF, "AMP005"), []);
  });
  await withServer({ unsafeFixes: true }, async (session) => {
    const titles = await quickFixTitles(session, "half.py", HALF, "AMP005");
    assert.ok(titles.length > 0 && titles.every((title) => title.endsWith("(unsafe)")), JSON.stringify(titles));
  });
});
