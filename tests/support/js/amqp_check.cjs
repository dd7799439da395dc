// The official JavaScript Service Bus and Event Hubs SDKs (rhea underneath) against funchost's
// AMQP endpoint. CONNECTION_STRING is the emulator string with the endpoint's port. Prints JSON.
const { ServiceBusClient } = require("@azure/service-bus");
const { EventHubProducerClient, EventHubConsumerClient, earliestEventPosition } = require("@azure/event-hubs");

const connection = process.env.CONNECTION_STRING;

async function serviceBus() {
  const client = new ServiceBusClient(connection);
  const sender = client.createSender("jsqueue");
  await sender.sendMessages({ body: "one", applicationProperties: { k: "v" }, messageId: "m1" });
  const batch = await sender.createMessageBatch();
  batch.tryAddMessage({ body: "two" });
  batch.tryAddMessage({ body: "three" });
  await sender.sendMessages(batch);
  const receiver = client.createReceiver("jsqueue");
  const got = [];
  while (got.length < 3) {
    const messages = await receiver.receiveMessages(3 - got.length, { maxWaitTimeInMs: 10000 });
    if (messages.length === 0) throw new Error(`received ${got.length} of 3`);
    got.push(...messages);
  }
  await receiver.abandonMessage(got[1]);
  await receiver.completeMessage(got[0]);
  await receiver.deadLetterMessage(got[2], { deadLetterReason: "bad", deadLetterErrorDescription: "really" });
  const [again] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  await receiver.completeMessage(again);
  const peeked = await receiver.peekMessages(5);
  const dlq = client.createReceiver("jsqueue", { subQueueType: "deadLetter" });
  const [dead] = await dlq.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  await dlq.completeMessage(dead);
  const result = {
    bodies: got.map((m) => m.body), firstProperties: got[0].applicationProperties, firstId: got[0].messageId,
    againBody: again.body, againDeliveryCount: again.deliveryCount, peeked: peeked.length,
    deadReason: dead.deadLetterReason, deadBody: dead.body,
  };
  await dlq.close();
  await receiver.close();
  await sender.close();
  await client.close();
  return result;
}

async function serviceBusMore() {
  const client = new ServiceBusClient(connection);
  const sender = client.createSender("jsmore");
  const later = new Date(Date.now() + 3600 * 1000);
  const [kept] = await sender.scheduleMessages([{ body: "scheduled" }], later);
  const [dropped] = await sender.scheduleMessages([{ body: "cancelled" }], later);
  await sender.cancelScheduledMessages([dropped]);
  await sender.sendMessages([{ body: "d" }, { body: "r" }]);
  const receiver = client.createReceiver("jsmore");
  const [d] = await receiver.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  const renewed = await receiver.renewMessageLock(d);
  await receiver.deferMessage(d);
  const [deferred] = await receiver.receiveDeferredMessages([d.sequenceNumber]);
  await receiver.completeMessage(deferred);
  await receiver.close();
  const deleting = client.createReceiver("jsmore", { receiveMode: "receiveAndDelete" });
  const [r] = await deleting.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  await deleting.close();
  const peek = client.createReceiver("jsmore");
  const peeked = (await peek.peekMessages(10)).map((m) => m.body);
  await peek.close();

  const sessions = client.createSender("jssessions");
  await sessions.sendMessages([{ body: "s1", sessionId: "alpha" }]);
  const session = await client.acceptNextSession("jssessions", { maxAutoLockRenewalDurationInMs: 0 });
  await session.setSessionState("state-1");
  const state = String(await session.getSessionState());
  await session.renewSessionLock();
  const [s1] = await session.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  await session.completeMessage(s1);
  await session.close();

  const topic = client.createSender("jstopic");
  await topic.sendMessages({ body: "fan" });
  const subscription = client.createReceiver("jstopic", "jssub");
  const [fan] = await subscription.receiveMessages(1, { maxWaitTimeInMs: 10000 });
  await subscription.completeMessage(fan);
  await subscription.close();
  await topic.close();
  await sessions.close();
  await sender.close();
  await client.close();
  return {
    scheduledKept: Number(kept) > 0, renewed: renewed instanceof Date, deferred: deferred.body, deleted: r.body,
    peeked, session: [session.sessionId, s1.body, state], fan: fan.body,
  };
}

async function eventHubs() {
  const producer = new EventHubProducerClient(connection, "jshub");
  const ids = await producer.getPartitionIds();
  const batch = await producer.createBatch({ partitionId: "1" });
  batch.tryAdd({ body: "e1" });
  batch.tryAdd({ body: "e2" });
  await producer.sendBatch(batch);
  await producer.sendBatch([{ body: "k1" }], { partitionKey: "key" });
  const partition = await producer.getPartitionProperties("1");
  await producer.close();
  const consumer = new EventHubConsumerClient("$Default", connection, "jshub");
  const events = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`received ${events.length} of 3 events`)), 30000);
    const subscription = consumer.subscribe({
      processEvents: async (received) => {
        events.push(...received.map((e) => e.body));
        if (events.length >= 3) {
          clearTimeout(timer);
          await subscription.close();
          resolve();
        }
      },
      processError: async (err) => { if (err.name !== "AbortError") console.error(err); },
    }, { startPosition: earliestEventPosition });
  });
  await consumer.close();
  return { ids, events: events.sort(), lastSequence: partition.lastEnqueuedSequenceNumber };
}

(async () => {
  const result = { serviceBus: await serviceBus(), serviceBusMore: await serviceBusMore(), eventHubs: await eventHubs() };
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
