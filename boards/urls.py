from django.urls import path

from boards import views

urlpatterns = [
    path("", views.project_list, name="project-list"),
    path("p/<slug:slug>/", views.board, name="board"),
    path("p/<slug:slug>/fragment", views.board_fragment, name="board-fragment"),
    path("p/<slug:slug>/tasks/<str:key>/", views.task_drawer, name="task-drawer"),
]
