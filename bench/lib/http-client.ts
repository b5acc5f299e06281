import net from 'node:net';

/**
 * A minimal keep-alive HTTP/1.1 GET client for latency benchmarks that run the API in their own
 * process: one request at a time on one socket, the request line written as is, the answer framed
 * by its Content-Length. node:http's client spends about a quarter of a millisecond of this
 * process's one thread per request building the request and parsing the answer; that is the
 * client's work, not the API's, and next to 2–4 ms statements it decided the ratio targets.
 * A connection idle for longer than the server keeps one open (Node's keepAliveTimeout, 5 s by
 * default) is replaced before the next request rather than raced against the server's close.
 */

export interface Answer {
  status: number;
  body: Buffer;
}

export interface BenchClient {
  get(path: string): Promise<Answer>;
  close(): void;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const MAX_IDLE_MS = 4000;

interface Pending {
  resolve: (a: Answer) => void;
  reject: (e: Error) => void;
}

export function connectBenchClient(host: string, port: number): BenchClient {
  let socket: net.Socket | undefined;
  let pending: Pending | undefined;
  let buffered: Buffer = Buffer.alloc(0);
  let lastUsed = 0;

  const settle = (outcome: { answer: Answer } | { error: Error }) => {
    const p = pending;
    pending = undefined;
    if ('answer' in outcome) p?.resolve(outcome.answer);
    else p?.reject(outcome.error);
  };

  const onData = (chunk: Buffer) => {
    buffered = buffered.length > 0 ? Buffer.concat([buffered, chunk]) : chunk;
    const headEnd = buffered.indexOf(HEAD_END);
    if (headEnd < 0) return;
    const head = buffered.subarray(0, headEnd).toString('latin1');
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    if (!length) {
      // Only fixed-length answers are expected (Koa sends JSON bodies with a Content-Length).
      settle({ error: new Error(`answer without Content-Length: ${head.split('\r\n')[0]}`) });
      socket?.destroy();
      return;
    }
    const end = headEnd + HEAD_END.length + Number(length[1]);
    if (buffered.length < end) return;
    lastUsed = performance.now();
    const answer = { status: Number(head.slice(9, 12)), body: buffered.subarray(headEnd + HEAD_END.length, end) };
    buffered = buffered.subarray(end);
    settle({ answer });
  };

  const open = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(port, host);
      s.setNoDelay(true);
      s.once('connect', () => resolve(s));
      // A replaced socket's late events must not settle the request of the one that replaced it.
      s.on('error', (error) => {
        reject(error);
        if (socket === s) settle({ error });
      });
      s.on('close', () => {
        if (socket !== s) return;
        socket = undefined;
        settle({ error: new Error('connection closed before the answer') });
      });
      s.on('data', (chunk: Buffer) => {
        if (socket === s) onData(chunk);
      });
    });

  return {
    get: async (path) => {
      if (pending) throw new Error('one request at a time');
      if (socket && performance.now() - lastUsed > MAX_IDLE_MS) {
        socket.destroy();
        socket = undefined;
      }
      socket ??= await open();
      buffered = Buffer.alloc(0);
      const s = socket;
      return new Promise<Answer>((resolve, reject) => {
        pending = { resolve, reject };
        s.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      });
    },
    close: () => {
      socket?.destroy();
      socket = undefined;
    },
  };
}
