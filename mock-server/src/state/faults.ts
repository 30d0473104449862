/**
 * Fault overrides with MSW semantics: the newest override of an operation fires first, each fires
 * `times` times and then expires. A fault either answers a status and body without running the
 * operation, or only delays it. A fault of `callFunction` may name a function (or a `mongodb-atlas`
 * action): it then fires only for calls of that name, so "insertOne fails, find works" can be set.
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
      ...(request.functionName !== undefined ? { functionName: request.functionName } : {}),
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

  /**
   * The fault that fires for this call of the operation, if any (counted as fired). `functionName`
   * is the name the call runs (callFunction); a fault that names a function fires only for it.
   */
  take(operationId: string, functionName?: string): Fault | undefined {
    if (this.faults.length === 0) return undefined;
    const index = this.faults.findIndex(
      (f) => f.operationId === operationId && (f.functionName === undefined || f.functionName === functionName),
    );
    if (index < 0) return undefined;
    const fault = this.faults[index]!;
    fault.remaining -= 1;
    if (fault.remaining <= 0) this.faults.splice(index, 1);
    return { ...fault };
  }

  /** Removes one fault; false when there is none with this id (it expired, or was never here). */
  remove(id: string): boolean {
    const index = this.faults.findIndex((f) => f.id === id);
    if (index < 0) return false;
    this.faults.splice(index, 1);
    return true;
  }

  clear(): void {
    this.faults = [];
  }
}
