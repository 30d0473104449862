/**
 * Fault overrides with MSW semantics: the newest override of an operation fires first, each fires
 * `times` times and then expires. A fault either answers a status and body without running the
 * operation, or only delays it.
 */
import type { ControlSchemas } from "../openapi/types.ts";

export type Fault = ControlSchemas["Fault"];
export type FaultRequest = ControlSchemas["FaultRequest"];

let nextFaultId = 1;

export class FaultStore {
  private faults: Fault[] = [];

  list(): Fault[] {
    return this.faults.map((f) => ({ ...f }));
  }

  add(request: FaultRequest, now: number): Fault {
    const times = request.times ?? 1;
    const fault: Fault = {
      id: `f-${nextFaultId++}`,
      operationId: request.operationId,
      delayMs: request.delayMs ?? 0,
      times,
      remaining: times,
      createdAt: new Date(now).toISOString(),
    };
    if (request.status !== undefined) fault.status = request.status;
    if (request.body !== undefined) fault.body = request.body;
    this.faults.unshift(fault);
    return { ...fault };
  }

  /** The fault that fires for this call of the operation, if any (counted as fired). */
  take(operationId: string): Fault | undefined {
    if (this.faults.length === 0) return undefined;
    const index = this.faults.findIndex((f) => f.operationId === operationId);
    if (index < 0) return undefined;
    const fault = this.faults[index]!;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return { ...fault };
  }

  clear(): void {
    this.faults = [];
  }
}
