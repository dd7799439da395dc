// Drives funchost's storage endpoints with the official JavaScript SDKs and prints what it saw
// as one JSON object (tests/integration/test_storage_endpoints_js.py asserts on it).
// Usage: node storage_endpoints_check.cjs  (CONNECTION_STRING in the environment)
"use strict";
const { BlobServiceClient } = require("@azure/storage-blob");
const { QueueServiceClient } = require("@azure/storage-queue");
const { TableClient, TableServiceClient, odata } = require("@azure/data-tables");
const { Readable } = require("stream");

async function blobs(connection) {
  const service = BlobServiceClient.fromConnectionString(connection);
  const container = service.getContainerClient("jscontainer");
  await container.create({ metadata: { purpose: "js" } });
  const small = container.getBlockBlobClient("folder/small.txt");
  await small.upload("hello from js", 13, { blobHTTPHeaders: { blobContentType: "text/plain" }, metadata: { k: "v" } });
  const big = Buffer.alloc(9 * 1024 * 1024 + 5, 7);
  await container.getBlockBlobClient("big.bin").uploadStream(Readable.from([big]), 4 * 1024 * 1024, 2);
  const downloaded = await container.getBlobClient("big.bin").downloadToBuffer();
  const props = await small.getProperties();
  const range = await small.download(6, 4);
  const rangeText = await streamText(range.readableStreamBody);
  const top = [];
  for await (const item of container.listBlobsByHierarchy("/")) top.push(item.kind + ":" + item.name);
  const blocks = await container.getBlockBlobClient("big.bin").getBlockList("committed");
  await small.delete();
  return {
    smallType: props.contentType, smallMetadata: props.metadata, range: rangeText,
    bigSize: downloaded.length, bigSame: downloaded.equals(big), committedBlocks: blocks.committedBlocks.length,
    top: top.sort(), smallExists: await small.exists(),
  };
}

async function streamText(stream) {
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

async function queues(connection) {
  const queue = QueueServiceClient.fromConnectionString(connection).getQueueClient("jsqueue");
  await queue.create();
  await queue.sendMessage("first");
  await queue.sendMessage("second", { visibilityTimeout: 60 });
  const received = (await queue.receiveMessages({ visibilityTimeout: 30 })).receivedMessageItems;
  const updated = await queue.updateMessage(received[0].messageId, received[0].popReceipt, "changed", 0);
  const peeked = (await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems;
  const again = (await queue.receiveMessages()).receivedMessageItems[0];
  await queue.deleteMessage(again.messageId, again.popReceipt);
  let staleCode = null;
  try {
    await queue.deleteMessage(received[0].messageId, received[0].popReceipt);
  } catch (error) {
    staleCode = error.details && error.details.errorCode;
  }
  const properties = await queue.getProperties();
  return {
    received: received.map((m) => [m.messageText, m.dequeueCount]), newReceipt: updated.popReceipt !== received[0].popReceipt,
    peeked: peeked.map((m) => m.messageText), again: [again.messageText, again.dequeueCount], staleCode,
    count: properties.approximateMessagesCount,
  };
}

async function tables(connection) {
  const insecure = { allowInsecureConnection: true }; // http on 127.0.0.1, as with Azurite
  await TableServiceClient.fromConnectionString(connection, insecure).createTable("JsTable");
  const table = TableClient.fromConnectionString(connection, "JsTable", insecure);
  await table.createEntity({ partitionKey: "p", rowKey: "1", name: "one", count: 1, big: { value: "12345678901", type: "Int64" } });
  await table.submitTransaction([
    ["create", { partitionKey: "p", rowKey: "2", name: "two", count: 2 }],
    ["upsert", { partitionKey: "p", rowKey: "3", name: "three", count: 3 }, "Merge"],
  ]);
  await table.updateEntity({ partitionKey: "p", rowKey: "1", extra: true }, "Merge");
  const one = await table.getEntity("p", "1");
  const filtered = [];
  for await (const entity of table.listEntities({ queryOptions: { filter: odata`count ge ${2}` } })) filtered.push(entity.rowKey);
  await table.deleteEntity("p", "2");
  const remaining = [];
  for await (const entity of table.listEntities()) remaining.push(entity.rowKey);
  let conflict = null;
  try {
    await table.createEntity({ partitionKey: "p", rowKey: "1" });
  } catch (error) {
    conflict = error.statusCode;
  }
  return { one: { name: one.name, count: one.count, extra: one.extra, big: one.big }, filtered, remaining, conflict };
}

(async () => {
  const connection = process.env.CONNECTION_STRING;
  const result = { blobs: await blobs(connection), queues: await queues(connection), tables: await tables(connection) };
  process.stdout.write(JSON.stringify(result, (key, value) => (typeof value === "bigint" ? `${value}n` : value)));
})().catch((error) => {
  process.stderr.write(String(error && error.stack || error));
  process.exit(1);
});
