/**
 * What an app keeps of a provider's account: its subject (the identity's id) and the profile
 * fields its `metadata_fields` ask for (realm-web's profile keys: `name`, `email`, `picture`,
 * `first_name`, `last_name`, `gender`, `birthday`, `min_age`, `max_age`), mapped from the ID
 * token's claims (Google, Apple; Apple's name comes in the form it posts, the first time only) or
 * Facebook's `/me`. `domain_restrictions` are checked on the e-mail address.
 */
import { wellFormedString } from "../data/well-formed-json.ts";
import { appServicesErrors as errors } from "../errors/catalogue.ts";
import type { OAuth2Settings } from "./settings.ts";

export interface ProviderAccount {
  sub: string;
  /** Every profile field the provider told, by realm-web's key. */
  profile: Record<string, unknown>;
}

// (A lone surrogate, in Apple's unsigned `user` field or a provider's reply, is U+FFFD: data/well-formed-json.ts.)
const str = (v: unknown) => (typeof v === "string" && v !== "" ? wellFormedString(v) : undefined);
const num = (v: unknown) => (typeof v === "number" ? v : undefined);

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/** Apple's `user` form field: `{"name":{"firstName":…,"lastName":…},"email":…}`. */
export function appleUser(text: string | undefined): { first?: string; last?: string } {
  if (!text) return {};
  try {
    const name = (JSON.parse(text) as { name?: { firstName?: unknown; lastName?: unknown } }).name;
    return defined({ first: str(name?.firstName), last: str(name?.lastName) }) as { first?: string; last?: string };
  } catch {
    return {};
  }
}

export function profileFromClaims(claims: Record<string, unknown>, apple: { first?: string; last?: string } = {}) {
  const appleName = [apple.first, apple.last].filter(Boolean).join(" ") || undefined;
  return defined({
    name: str(claims.name) ?? appleName,
    email: str(claims.email),
    picture: str(claims.picture),
    first_name: str(claims.given_name) ?? apple.first,
    last_name: str(claims.family_name) ?? apple.last,
    gender: str(claims.gender),
    birthday: str(claims.birthdate),
  });
}

export function profileFromGraph(me: Record<string, unknown>) {
  const picture = (me.picture as { data?: { url?: unknown } } | undefined)?.data?.url;
  const ages = me.age_range as { min?: unknown; max?: unknown } | undefined;
  return defined({
    name: str(me.name),
    email: str(me.email),
    picture: str(picture),
    first_name: str(me.first_name),
    last_name: str(me.last_name),
    gender: str(me.gender),
    birthday: str(me.birthday),
    min_age: num(ages?.min),
    max_age: num(ages?.max),
  });
}

/** The user's profile data: the metadata fields asked for (a required one must be there). */
export function profileData(settings: OAuth2Settings, account: ProviderAccount): Record<string, unknown> {
  if (settings.domainRestrictions.length > 0) {
    const email = str(account.profile.email);
    const domain = email?.slice(email.lastIndexOf("@") + 1).toLowerCase() ?? "";
    if (!settings.domainRestrictions.includes(domain)) throw errors.oauth2DomainNotAllowed(domain);
  }
  const data: Record<string, unknown> = {};
  for (const field of settings.metadataFields) {
    const value = account.profile[field.name];
    if (value === undefined) {
      if (field.required) throw errors.oauth2MetadataMissing(field.name);
      continue;
    }
    data[field.name] = value;
  }
  return data;
}
