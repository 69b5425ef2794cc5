// The real `amplint server`, started with the command serverOptions.ts builds, spoken to over
// stdio through the JSON-RPC protocol layer vscode-languageclient/node itself runs on.
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import {
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializeRequest,
  InitializedNotification,
  PublishDiagnosticsNotification,
  PublishDiagnosticsParams,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { DEFAULT_SETTINGS, clientOptions, serverCommand } from "../serverOptions";

// The interpreter that has amplint and pygls: AMPLINT_PYTHON (the pytest driver sets it), else
// the default the extension itself falls back to.
const python = process.env.AMPLINT_PYTHON;
const DEPRECATED = "import torch\n\nwith torch.cuda.amp.autocast():\n    pass\n";

test("amplint server publishes AMP001 for a file opened through the protocol connection", { timeout: 60_000 }, async () => {
  const settings = { ...DEFAULT_SETTINGS, interpreter: python ? [python] : [] };
  const command = serverCommand(settings, { platform: process.platform, exists: fs.existsSync });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "amplint-vscode-"));
  const server = spawn(command.command, command.args, { cwd: root, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (chunk) => (stderr += chunk));
  const connection = createProtocolConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  const file = path.join(root, "train.py");
  const uri = pathToFileURL(file).toString();
  const published = new Promise<PublishDiagnosticsParams>((resolve) => {
    connection.onNotification(PublishDiagnosticsNotification.type, (params) => {
      if (params.uri === uri) {
        resolve(params);
      }
    });
  });
  connection.listen();
  try {
    const options = clientOptions(settings);
    const initialized = await connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: pathToFileURL(root).toString(),
      capabilities: {},
      initializationOptions: options.initializationOptions,
      workspaceFolders: null,
    });
    assert.equal(initialized.serverInfo?.name, "amplint");
    await connection.sendNotification(InitializedNotification.type, {});
    await connection.sendNotification(DidOpenTextDocumentNotification.type, {
      textDocument: { uri, languageId: "python", version: 1, text: DEPRECATED },
    });
    const { diagnostics } = await published;
    assert.equal(diagnostics.length, 1, JSON.stringify(diagnostics));
    const [diagnostic] = diagnostics;
    assert.equal(diagnostic.code, "AMP001");
    assert.equal(diagnostic.source, "amplint");
    assert.deepEqual(diagnostic.range, { start: { line: 2, character: 5 }, end: { line: 2, character: 28 } });
    await connection.sendRequest(ShutdownRequest.type);
    await connection.sendNotification(ExitNotification.type);
  } catch (error) {
    throw new Error(`${String(error)}\nserver stderr:\n${stderr}`);
  } finally {
    connection.dispose();
    server.kill();
    fs.rmSync(root, { recursive: true, force: true });
  }
});
