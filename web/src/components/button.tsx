import type { ButtonHTMLAttributes, ReactNode } from "react";

interface ButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  /** A request runs: the button is disabled and says so (its name stays the same). */
  busy?: boolean;
  variant?: "primary" | "secondary" | "danger" | "link";
  children: ReactNode;
}

export function Button({
  busy = false,
  variant = "primary",
  disabled,
  children,
  className,
  type,
  ...rest
}: ButtonProps) {
  return (
    <button
      type={type ?? "button"}
      className={`button button-${variant}${className ? ` ${className}` : ""}`}
      disabled={busy || disabled}
      aria-busy={busy || undefined}
      {...rest}
    >
      {children}
      {busy ? <span className="spinner" aria-hidden="true" /> : null}
    </button>
  );
}
