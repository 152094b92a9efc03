"""Every stdout text of `kosmos chat`, in Russian (the reference texts, verbatim) and English."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from kosmos.config_chat import CatalogEntry

Lang = Literal["en", "ru"]
LANGS: tuple[Lang, ...] = ("en", "ru")

# key -> (English, Russian). The Russian texts are the reference chat's; keep them verbatim.
TEXTS: dict[str, tuple[str, str]] = {
    "greeting": (
        "Hello! I am the kosmos agent: tell me in plain words what you need.",
        "Привет! Я агент kosmos: опишите простыми словами, что нужно сделать.",
    ),
    "help_tools": ("What I can do:", "Что я умею:"),
    "help_no_tools": (
        "No tools are configured: add skills or chat.tools to kosmos.yaml.",
        "Инструменты не настроены: добавьте навыки или chat.tools в kosmos.yaml.",
    ),
    "help_commands": (
        "Help: {help}. Exit: {exit}.",
        "Справка: {help}. Выход: {exit}.",
    ),
    "goodbye": ("Goodbye!", "До свидания!"),
    "classifying": (
        "Checking whether I can help with that..",
        "Анализирую релевантность запроса..",
    ),
    "llm_error": ("LLM request failed, exiting..", "Ошибка при запросе LLM, завершаюсь.."),
    "parse_error": (
        "Could not parse the LLM's answer, exiting..",
        "Ошибка при разборе ответа LLM, завершаюсь..",
    ),
    "irrelevant": (
        "That request is outside what this agent does.",
        "Запрос не связан с функционалом агента.",
    ),
    "relevant": ("The request is relevant, thinking..", "Запрос релевантен, думаю.."),
    "selecting": ("Choosing a suitable tool..", "Выбираю подходящий инструмент.."),
    "selection_fail": (
        "Could not pick a tool. Please rephrase the request.",
        "Не удалось определить инструмент. Просьба переформулировать запрос.",
    ),
    "selected": (
        "Chose tool {tool} with parameters {params}",
        "Выбран инструмент {tool} с параметрами {params}",
    ),
    "no_params": ("(none)", "(нет)"),
    "validating": ("Validating the tool..", "Валидирую инструмент.."),
    "unclear": (
        "I did not quite get the question. Please rephrase.",
        "Не совсем понял вопрос. Просьба переформулировать.",
    ),
    "too_long": (
        "The {param} is too long (at most {max} characters). Please say it more briefly.",
        "Параметр {param} слишком длинный (не более {max} символов). "
        "Просьба сформулировать более кратко.",
    ),
    "limit": (
        "At most {max} characters; this is {got}.",
        "Не более {max} символов; здесь {got}.",
    ),
    "too_long_question": (
        "The question is too long. Please put it more briefly.",
        "Вопрос слишком длинный. Просьба сформулировать более кратко.",
    ),
    "too_long_theme": (
        "The theme is too long. Please put it more briefly.",
        "Тема слишком длинная. Просьба сформулировать более кратко.",
    ),
    "bad_choice": (
        "The {param} must be one of: {choices}. Please rephrase.",
        "Параметр {param} должен быть одним из: {choices}. Просьба переформулировать.",
    ),
    "ready": (
        "Tool {tool} is checked and ready to call. Parameters: {params}",
        "Инструмент {tool} проверен и готов к вызову. Параметры: {params}",
    ),
    "ready_question": (
        "Tool {tool} is checked and ready to call. Query: {value}",
        "Инструмент {tool} проверен и готов к вызову. Запрос: {value}",
    ),
    "ready_theme": (
        "Tool {tool} is checked and ready to call. Theme: {value}",
        "Инструмент {tool} проверен и готов к вызову. Тема: {value}",
    ),
    "unknown_tool": (
        "Could not validate the request. Please rephrase.",
        "Не удалось провалидировать запрос. Просьба переформулировать.",
    ),
    "executing": ("Running the tool..", "Выполняю инструмент.."),
    "tool_failed": (
        "A terrible error happened while calling {tool}.. A thousand apologies! "
        "Shall we try again?",
        "Произошла чудовищная ошибка при вызове {tool}.. Тысяча извинений! Попробуем снова?",
    ),
    "rag_failed": (
        "A terrible error happened while querying the RAG service.. A thousand apologies! "
        "Shall we try again?",
        "Произошла чудовищная ошибка при запросе на RAG сервис.. Тысяча извинений! "
        "Попробуем снова?",
    ),
    "haiku_failed": (
        "A terrible error happened while generating the haiku.. A thousand apologies! "
        "Shall we try again?",
        "Произошла чудовищная ошибка при генерации хайку.. Тысяча извинений! Попробуем снова?",
    ),
    "rag_answer": ("RAG answer: {answer}", "Ответ RAG: {answer}"),
    "rag_titles": (
        "Titles of the top {top_k} documents: {titles}",
        "Заголовки топ-{top_k} документов: {titles}",
    ),
    "haiku": ("Haiku: {text}", "Хайку: {text}"),
    # The reference chat prints total_words under the syllables label and back; here each
    # figure gets its own.
    "haiku_syllables": ("#syllables per line: {syllables}", "#слогов построчно: {syllables}"),
    "haiku_words": ("#words in total: {words}", "#слов итого: {words}"),
    "field": ("{name}: {value}", "{name}: {value}"),
    "skill_done": ("Skill {skill} finished: {message}", "Навык {skill} выполнен: {message}"),
    "skill_failed": (
        "Skill {skill} ended ({status}): {message}",
        "Навык {skill} не выполнен ({status}): {message}",
    ),
    "host_looking": (
        "Looking for the skills stored on {host}..",
        "Ищу навыки, сохранённые на {host}..",
    ),
    "host_skills": (
        "Skills stored on {host}, offered as tools: {names}",
        "Навыки с {host}, доступные как инструменты: {names}",
    ),
    "host_changed": ("Skills now run on {host}.", "Навыки теперь выполняются на {host}."),
    "chat_ended": (
        "The chat has ended. Type a request to start a new one.",
        "Чат завершён. Введите запрос, чтобы начать новый.",
    ),
}


def pick_lang(flag: str | None, env: Mapping[str, str]) -> Lang:
    """`--lang`, else the locale (LC_ALL, LC_MESSAGES, LANG: `ru_RU.UTF-8` means Russian)."""
    if flag in LANGS:
        return flag
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            return "ru" if value.lower().startswith("ru") else "en"
    return "en"


class Catalog:
    """The texts of one language; the config may add keys or replace shipped ones."""

    def __init__(self, lang: Lang, extra: Mapping[str, CatalogEntry] | None = None) -> None:
        self.lang = lang
        index = LANGS.index(lang)
        self.texts = {key: pair[index] for key, pair in TEXTS.items()}
        for key, entry in (extra or {}).items():
            self.texts[key] = (entry.ru if lang == "ru" else None) or entry.en

    def __contains__(self, key: str) -> bool:
        return key in self.texts

    def __call__(self, key: str, **values: object) -> str:
        text = self.texts[key]
        return text.format(**values) if values else text
