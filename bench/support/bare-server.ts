// The baseline of the webhook benchmarks, run as its own process: a bare Node HTTPS server with
// the webhook server's TLS and HTTP settings that reads each request body and answers a fixed
// AdmissionReview response (the webhook's own answer to the same request). With `echo-uid` it
// puts the request's uid into the answer (found with a regular expression, nothing decoded), so
// that a real API server accepts it: a webhook that does no work.
//
//   node bare-server.js <cert.pem> <key.pem> <response.json> <port> [echo-uid]
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';

const [certFile, keyFile, responseFile, portText, mode] = process.argv.slice(2);
if (!certFile || !keyFile || !responseFile || !portText) {
  process.stderr.write('usage: bare-server <cert.pem> <key.pem> <response.json> <port>\n');
  process.exit(2);
}
const response = readFileSync(responseFile);
const ok = Buffer.from('ok');
// The request's uid is the first uid in its body (the API server writes request.uid first).
const uidPattern = /"uid":"([^"]*)"/;
const template = JSON.parse(response.toString('utf8')) as { response: { uid: string } };
const [head, tail] = response.toString('utf8').split(JSON.stringify(template.response.uid));
const answer = (body: Buffer): Buffer => {
  if (mode !== 'echo-uid') return response;
  const uid = uidPattern.exec(body.toString('latin1'))?.[1] ?? '';
  return Buffer.from(`${head ?? ''}"${uid}"${tail ?? ''}`);
};

const server = createServer(
  {
    cert: readFileSync(certFile),
    key: readFileSync(keyFile),
    minVersion: 'TLSv1.2',
    keepAliveTimeout: 120_000,
    headersTimeout: 10_000,
    requestTimeout: 30_000,
  },
  (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': ok.length });
      res.end(ok);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
    });
    req.on('end', () => {
      const reply = answer(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': reply.length });
      res.end(reply);
    });
  },
);
// How many TLS connections clients opened: tells whether they keep connections alive.
let connections = 0;
let requests = 0;
server.on('secureConnection', () => {
  connections++;
});
server.on('request', () => {
  requests++;
});
server.listen(Number(portText), '127.0.0.1', () => {
  process.stdout.write(`bare server listening on 127.0.0.1:${portText}\n`);
});
const stop = (): void => {
  process.stdout.write(`served ${requests} requests on ${connections} TLS connections\n`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
