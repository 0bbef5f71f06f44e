// hello.ts: a TypeScript program run by execfarm in a fresh sandbox.
interface Step {
  name: string;
  ms: number;
}

const steps: Step[] = [
  { name: "parse", ms: 20 },
  { name: "plan", ms: 10 },
  { name: "run", ms: 30 },
];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

console.log("hello from execfarm: TypeScript in an isolated sandbox");
for (const step of steps) {
  await sleep(step.ms); // top-level await and real timers
  console.log(`step ${step.name} done after ${step.ms} ms`);
}
const total = steps.reduce((sum, s) => sum + s.ms, 0);
console.log({ steps: steps.length, totalMs: total });
console.error("this line goes to stderr");
