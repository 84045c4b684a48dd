/**
 * The real `@a2a-js/sdk` client against a Belay gateway, plus helpers that turn its ts-proto objects back into wire
 * JSON so tests compare what travelled. Credentials go in through `fetchImpl` (card, JSON-RPC and HTTP+JSON alike).
 */
import { SendMessageRequest, StreamResponse, Task } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';

export type Binding = 'JSONRPC' | 'HTTP+JSON';

export async function a2aClient(baseUrl: string, key: string, binding: Binding): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const factory = new ClientFactory({
    transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    preferredTransports: [binding],
  });
  const client = await factory.createFromUrl(baseUrl);
  if (client.transport.protocolName !== binding) throw new Error(`expected the ${binding} transport, got ${client.transport.protocolName}`);
  return client;
}

/** A SendMessageRequest from its wire JSON. */
export function sendRequest(wire: Record<string, unknown>): Parameters<Client['sendMessage']>[0] {
  return SendMessageRequest.fromJSON(wire);
}

/** Wire JSON as it travelled (tests poke into it freely). */
export type WireJson = any;

export function taskJson(t: unknown): WireJson {
  return Task.toJSON(t as Task);
}

export function streamJson(e: unknown): WireJson {
  return StreamResponse.toJSON(e as StreamResponse);
}

/** Reads a stream to its end (or until `stop` says so), as wire JSON. */
export async function collect(stream: AsyncGenerator<unknown, void, undefined>, stop?: (e: WireJson, all: WireJson[]) => boolean): Promise<WireJson[]> {
  const out: WireJson[] = [];
  for await (const e of stream) {
    out.push(streamJson(e));
    if (stop?.(out.at(-1), out)) break;
  }
  return out;
}

export function stateOf(e: WireJson): string | undefined {
  return e.task?.status?.state ?? e.statusUpdate?.status?.state;
}
