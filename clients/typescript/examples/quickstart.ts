import { OrcamemClient } from "@orcamem/client";

const memory = new OrcamemClient({
  baseUrl: process.env.ORCAMEM_URL ?? "http://127.0.0.1:8080", // `orcamem serve`
  space: "user_alice",
});
await memory.observe("user", "I work as a nurse in Lyon.", { session_id: "chat-1" });
await memory.remember({ text: "Alice prefers short answers.", category: "preference" });
const block = await memory.recall("What is my job?");
console.log(block); // the memory block a chat would get before this turn
