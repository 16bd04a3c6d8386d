// Behaviour shared by every page. No inline scripts anywhere (CSP-friendly).
document.querySelectorAll("select[data-autosubmit]").forEach((select) => {
  select.addEventListener("change", () => select.form.submit());
});
