import { mongoServiceOf } from "../../config/app-config.ts";
import { fromEJSON, isDocument } from "../../data/documents.ts";
import { fromEJSONInSlices } from "../../data/ejson-in-slices.ts";
import { isMongoAction, MongoService } from "../../data/mongo-actions.ts";
import { strictFormProblemIn } from "../../data/strict-forms.ts";
import { mayHoldLoneSurrogates } from "../../data/well-formed-json.ts";
import { appServicesErrors as errors } from "../../errors/catalogue.ts";
import { addressKey } from "../../http/client-address.ts";
import { slicedFrom } from "../../http/json-body.ts";
import { requestExpansion } from "../request-expansion.ts";
import { defineRoute } from "../route.ts";
import { takeActionTurn, takeCallPlace } from "./call-caps.ts";

const badArguments = (error: unknown) =>
  errors.badRequest(`invalid Extended JSON in arguments: ${(error as Error).message}`);

/**
 * A MongoDB action's arguments: those of a large body are read a part at a time, other requests
 * served meanwhile (docs/decisions/0024-large-bodies-in-slices.md).
 */
async function parseActionArguments(args: unknown[], large: boolean, text: string | null): Promise<unknown[]> {
  const problem = await strictFormProblemIn(text, args);
  if (problem !== null) throw badArguments(new Error(problem));
  try {
    return (large ? await fromEJSONInSlices(args) : fromEJSON(args)) as unknown[];
  } catch (error) {
    throw badArguments(error);
  }
}

/**
 * Runs an app function (as the calling user) or a MongoDB service action; answers the result as
 * canonical Extended JSON.
 */
export default defineRoute("callFunction", "access", async (request, reply) => {
  const { app, user } = request.caller!;
  const { name, service } = request.body;
  const args = request.body.arguments ?? [];
  let text: string;
  // (A `null` or `""` service is none, as Go reads either: an app function's call.)
  if (service) {
    if (service !== mongoServiceOf(app.config)) throw errors.serviceNotFound(service);
    if (!isMongoAction(name)) throw errors.functionNotFound(name);
    const [argument] = await parseActionArguments(
      args,
      (request.jsonText?.length ?? 0) >= slicedFrom,
      request.jsonText,
    );
    if (!isDocument(argument)) throw errors.badRequest(`${name} expects one argument document`);
    // The user's actions take turns (call-caps.ts): a burst of them waits in the user's own line,
    // and one whose client leaves meanwhile never runs (nobody to answer: the connection is left alone).
    const endTurn = await takeActionTurn(app, user, request.ip, reply.raw, request.server.emulator.options);
    if (endTurn === null) {
      reply.hijack();
      return reply;
    }
    try {
      const principal = {
        kind: "user" as const,
        user,
        request: requestExpansion(request),
        address: addressKey(request.ip),
      };
      text = await new MongoService(app, principal).runText(name, argument);
    } finally {
      endTurn();
    }
  } else {
    // The function's process reads and checks the arguments (and answers 400 when it cannot): their
    // text, or a large body whole, which the main thread then does not write again (the body was
    // read in slices: http/json-body.ts) — unless it escapes a lone surrogate, which the parsed
    // arguments hold as U+FFFD (data/well-formed-json.ts): then they are written (~30 ms for 18 MB).
    const body = request.jsonText;
    const argsInBody = body !== null && body.length >= slicedFrom && !mayHoldLoneSurrogates(body);
    // Arguments written again lose what JSON cannot write (a number past a double, read as Infinity,
    // would come as null): such forms are refused here, before they are (data/strict-forms.ts).
    if (!argsInBody) {
      const problem = await strictFormProblemIn(body, args);
      if (problem !== null) throw badArguments(new Error(problem));
    }
    // A place among the calls this user and address may have running (call-caps.ts).
    const givePlace = takeCallPlace(app, user, request.ip);
    try {
      text = await app.functions.callFromText(name, argsInBody ? body : JSON.stringify(args), {
        user,
        system: false,
        fromClient: true,
        argsInBody,
        args: () => args,
        request: requestExpansion(request),
        address: addressKey(request.ip),
      });
    } finally {
      givePlace();
    }
  }
  return reply.code(200).type("application/json").send(text);
});
